// The service for the pay-and-call bench, in its own process: all roles on the embedded defaults
// (PGlite in a temp data dir, devchain, built-in facilitator), plus one bench-only setup step that
// creates a funded wallet and hands its key to the bench client, so both paths sign with one key.
// Started by run.ts; prints one `BENCH_READY {json}` line, stops on SIGTERM.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { loadConfig, ROLES } from '../../src/config.js';
import { loadMasterKey } from '../../src/modules/wallets/master-key.js';
import { KeySealer } from '../../src/modules/wallets/sealing.js';
import { startServer } from '../../src/server.js';

const apiPort = process.env.BENCH_API_PORT!;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-pay-'));
const config = loadConfig({
  ...process.env,
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: apiPort,
  FACILITATOR_PORT: '0',
  RELAY_PORT: '0',
  ASSETS_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  DATABASE_URL: process.env.BENCH_DATABASE_URL ?? '',
  PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}`,
});
const server = await startServer({ config, roles: ROLES, adminSocket: false });
const stop = async () => {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());

const api = server.urls.api;
const mgmt = await server.ctx.mgmtCredentials.create('bench');
const created = await fetch(`${api}/v1/wallets`, {
  method: 'POST',
  headers: { authorization: `Bearer ${mgmt.secret}`, 'content-type': 'application/json' },
  body: JSON.stringify({ externalId: 'bench', name: 'bench' }),
});
const { data } = (await created.json()) as { data: { wallet: { id: string; address: `0x${string}` }; credential: { secret: string } } };
await server.ctx.chain.devchain!.fund(data.wallet.address, '1000');
const [row] = await server.ctx.database.query<{ key_ref: string }>(sql`select key_ref from wallets where id = ${data.wallet.id}`);
const privateKey = `0x${new KeySealer(loadMasterKey(config).key).open(row.key_ref, data.wallet.id).toString('hex')}`;

console.log(
  `BENCH_READY ${JSON.stringify({
    api,
    address: data.wallet.address,
    secret: data.credential.secret,
    privateKey,
    network: server.ctx.chain.network,
    asset: server.ctx.chain.asset.address,
    database: server.ctx.database.kind,
  })}`,
);
