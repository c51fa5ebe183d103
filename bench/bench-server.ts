// The service as a bench runs it, in its own process: a temp data dir, free ports, quiet logs,
// the database run.ts handed over in BENCH_DATABASE_URL (PGlite when empty), stopped on SIGTERM.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { ROLES, type Role } from '../src/platform/server-settings.js';
import type { ModuleFactory } from '../src/modules/module.js';
import type { Clock } from '../src/platform/clock.js';
import { startServer, type RunningServer } from '../src/server.js';

export async function startBenchServer(
  name: string,
  options: { env?: Record<string, string>; roles?: readonly Role[]; factories?: ModuleFactory[]; clock?: Clock } = {},
): Promise<RunningServer> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tollgate-bench-${name}-`));
  const config = loadConfig({
    ...process.env,
    TOLLGATE_DATA_DIR: dataDir,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    DEVCHAIN_PORT: '0',
    LOG_LEVEL: 'warn',
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
    ...options.env,
  });
  const server = await startServer({ config, roles: options.roles ?? ROLES, factories: options.factories, clock: options.clock, adminSocket: false });
  const stop = async () => {
    await server.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
  return server;
}
