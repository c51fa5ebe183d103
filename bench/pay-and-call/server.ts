// The service for the pay-and-call bench, in its own process: all roles on the embedded defaults
// (PGlite in a temp data dir, devchain, built-in facilitator), plus one bench-only setup step that
// creates a funded wallet and hands its key to the bench client, so both paths sign with one key.
// Started by run.ts; prints one `BENCH_READY {json}` line, stops on SIGTERM.
import { sql } from 'drizzle-orm';
import { loadMasterKey } from '../../src/platform/master-key.js';
import { KeySealer } from '../../src/platform/sealing.js';
import { startBenchServer } from '../bench-server.js';

const apiPort = process.env.BENCH_API_PORT!;
const server = await startBenchServer('pay', {
  env: { API_PORT: apiPort, PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` },
});

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
const privateKey = `0x${new KeySealer(loadMasterKey(server.ctx.config).key).open(row.key_ref, data.wallet.id).toString('hex')}`;

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
