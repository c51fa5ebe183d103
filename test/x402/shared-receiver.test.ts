// /x402-test/* on a cluster (issue 48 item 6): every node asks to be paid at the same address when X402_TEST_PAY_TO
// is unset (the deployment's one dev receiver, recorded in the database), not one address per data dir.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startEphemeralDevchain, type Devchain } from '../../src/chain/devchain.js';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

const dirs: string[] = [];
let chain: Devchain | undefined;
let database: TestDatabase | undefined;
afterAll(async () => {
  await database?.close();
  await chain?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const payToOf = async (server: RunningServer) => {
  const answer = await server.origins.api!.inject({ method: 'GET', url: '/x402-test/ping' });
  expect(answer.statusCode).toBe(402);
  const required = JSON.parse(Buffer.from(answer.headers['payment-required'] as string, 'base64').toString('utf8')) as { accepts: Array<{ payTo: string }> };
  return required.accepts[0]!.payTo;
};

describe('the x402 test endpoints on a cluster', () => {
  it('every node, each with its own data dir, asks for payment to the one address; a restart keeps it', { timeout: 120_000 }, async () => {
    chain = await startEphemeralDevchain();
    database = await openTestDatabase();
    const shared = { SECRET_PEPPER: randomBytes(32).toString('hex'), WALLET_MASTER_KEY: randomBytes(32).toString('hex'), CHAIN_RPC_URL: chain.rpcUrl, ALLOW_DEV_KEYS: '1' };
    const node = async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-receiver-'));
      dirs.push(dataDir);
      const config = loadConfig({ ...shared, TOLLGATE_DATA_DIR: dataDir, ...(database!.url ? { DATABASE_URL: database!.url } : {}), API_PORT: '0', LOG_LEVEL: 'silent' });
      return startServer({ config, roles: ['api'], database: database!.database, adminSocket: false, log: pino({ level: 'silent' }) });
    };
    const [a, b] = [await node(), await node()];
    try {
      const payTo = await payToOf(a);
      expect(payTo).toMatch(/^0x[0-9a-fA-F]{40}$/);
      expect(await payToOf(b)).toBe(payTo);
      await b.stop();
      const c = await node();
      expect(await payToOf(c)).toBe(payTo);
      await c.stop();
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
