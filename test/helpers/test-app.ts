import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { ROLES, type Role } from '../../src/platform/server-settings.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import type { Clock } from '../../src/platform/clock.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { createLogger } from '../../src/platform/request-context.js';
import { openTestDatabase, type TestDatabase } from './database.js';

export interface TestAppOptions {
  env?: Record<string, string>;
  roles?: Role[];
  clock?: Clock;
  factories?: ModuleFactory[];
  log?: Logger;
  /** Runs the database watchdog, reporting to this instead of exiting. */
  onDatabaseLost?: (code: number) => void;
}

export interface TestApp extends RunningServer {
  config: Config;
  testDatabase: TestDatabase;
  /** An identity token for `sub` from the dev issuer. */
  identityToken(sub: string, ttlSeconds?: number): Promise<string>;
  /** A new wallet management credential's secret. */
  mgmtSecret(name?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * The whole service on a fresh database, every origin listening on a free loopback port, with
 * in-memory dev secrets. Use `app.origins.api.inject(...)` or real HTTP against `app.urls`.
 */
export async function buildTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const testDatabase = await openTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-test-'));
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    DEVCHAIN_PORT: '0',
    WORKER_PORT: '0',
    LOG_LEVEL: 'silent',
    ...(testDatabase.url ? { DATABASE_URL: testDatabase.url } : {}),
    ...options.env,
  });
  let server: RunningServer;
  try {
    server = await startServer({
      config,
      roles: options.roles ?? ROLES,
      clock: options.clock,
      factories: options.factories,
      database: testDatabase.database,
      ephemeralSecrets: true,
      adminSocket: false,
      onDatabaseLost: options.onDatabaseLost,
      log: options.log ?? createLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
    });
  } catch (error) {
    await testDatabase.close();
    throw error;
  }
  return {
    ...server,
    config,
    testDatabase,
    identityToken: (sub, ttl) => server.ctx.devIdentity!.sign(sub, ttl),
    mgmtSecret: async (name = 'test') => (await server.ctx.mgmtCredentials.create(name)).secret,
    async close() {
      await server.stop();
      await testDatabase.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
