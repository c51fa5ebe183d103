// The service for the pay-and-call bench, in its own process: all roles on the embedded defaults
// (PGlite in a temp data dir, devchain, built-in facilitator), plus one bench-only setup step that
// creates two funded wallets — one with no spend policy (whose key it also hands to the bench client, so the
// direct path and pay-and-call sign with one key) and one whose policy is set through the real API
// (`PUT /v1/wallets/{walletId}/policy`, management credential) — and prints them on one `BENCH_READY {json}`
// line. Started by run.ts; stops on SIGTERM.
import { sql } from 'drizzle-orm';
import { loadMasterKey } from '../../src/platform/master-key.js';
import { KeySealer } from '../../src/platform/sealing.js';
import { startBenchServer } from '../bench-server.js';

const apiPort = process.env.BENCH_API_PORT!;
const server = await startBenchServer('pay', {
  env: {
    API_PORT: apiPort,
    PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}`,
    // The facilitator's settle budgets (per payer 120 a minute by default) are not what this measures: the `bench` key
    // pays twice per iteration, ~300 times a minute, and would be refused (503 facilitator_unavailable) within a round.
    FACILITATOR_SETTLE_LIMIT_PER_PAYER: '1000000',
    FACILITATOR_SETTLE_LIMIT_PER_CLIENT: '1000000',
    FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: '1000000',
    FACILITATOR_SETTLE_LIMIT_PER_OWNER: '1000000',
  },
});

const api = server.urls.api;
const network = server.ctx.chain.network;
const asset = server.ctx.chain.asset.address;
const mgmt = await server.ctx.mgmtCredentials.create('bench');
const call = async (method: string, path: string, body: unknown) => {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: { authorization: `Bearer ${mgmt.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as { data: unknown };
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json.data;
};
const createWallet = async (externalId: string) => {
  const data = (await call('POST', '/v1/wallets', { externalId, name: externalId })) as { wallet: { id: string; address: `0x${string}` }; credential: { secret: string } };
  await server.ctx.chain.devchain!.fund(data.wallet.address, '1000');
  return { id: data.wallet.id, address: data.wallet.address, secret: data.credential.secret };
};

const plain = await createWallet('bench');
const guarded = await createWallet('bench-policy');

// A realistic policy that lets every bench call through (the ping costs 100 atomic units): rolling limits far
// above what the run spends, a per-call cap, the bench's host allowed, another recipient denied, and an
// approval threshold above the price. Every rule is evaluated on every call; none refuses.
const usdg = (amount: string) => ({ network, asset, amount });
const policy = {
  limits: [
    { window: '1h', ...usdg('1000000000') },
    { window: '24h', ...usdg('10000000000') },
    { window: '30d', ...usdg('100000000000') },
  ],
  maxPerCall: usdg('1000'),
  allowHosts: ['127.0.0.1', '*.example.com'],
  denyPayTo: ['0x000000000000000000000000000000000000dEaD', '0x1111111111111111111111111111111111111111'],
  approvalAbove: usdg('500'),
  approvalTimeoutSeconds: 600,
};
await call('PUT', `/v1/wallets/${guarded.id}/policy`, policy);

const [row] = await server.ctx.database.query<{ key_ref: string }>(sql`select key_ref from wallets where id = ${plain.id}`);
const privateKey = `0x${new KeySealer(loadMasterKey(server.ctx.config).key).open(row.key_ref, plain.id).toString('hex')}`;

console.log(
  `BENCH_READY ${JSON.stringify({
    api,
    address: plain.address,
    secret: plain.secret,
    privateKey,
    policyWallet: { id: guarded.id, secret: guarded.secret, policy },
    network,
    asset,
    database: server.ctx.database.kind,
  })}`,
);
