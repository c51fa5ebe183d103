// One Tollgate process for the trading benchmark: the whole service without listeners or loops (roles
// none) over the benchmark's PostgreSQL, so the benchmark drives the scheduler and the tick consumer itself.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/platform/clock.js';
import { createLogger } from '../../src/platform/request-context.js';
import { startServer } from '../../src/server.js';

export async function startNode(databaseUrl: string, options: { clock?: Clock; chainRpcUrl?: string } = {}) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-trading-'));
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    DEVCHAIN_PORT: '0',
    LOG_LEVEL: 'warn',
    ...(options.chainRpcUrl ? { CHAIN_RPC_URL: options.chainRpcUrl } : {}),
  });
  const server = await startServer({ config, roles: [], clock: options.clock, ephemeralSecrets: true, adminSocket: false, log: createLogger('warn') });
  return {
    ctx: server.ctx,
    async stop() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
