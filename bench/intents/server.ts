// The service for the intents bench, in its own process: api, facilitator and worker roles on the
// devchain, over the PostgreSQL database run.ts created. Sets up one user, project, key, merchant
// and a funded payer, prints one `BENCH_READY {json}` line, stops on SIGTERM.
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startBenchServer } from '../bench-server.js';

const server = await startBenchServer('intents', {
  // The pay-flow loop comes from one address; the bench measures latency, not the limiter.
  env: { INTENT_PAY_LIMIT_PER_CLIENT: '100000' },
});

const api = server.urls.api;
const identity = await server.ctx.devIdentity!.sign('bench-user');
const post = async (url: string, body: unknown) => {
  const response = await fetch(`${api}${url}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${identity}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { data: Record<string, any> }).data;
};
const { project, apiKey } = await post('/v1/projects', { name: 'bench' });
const merchant = await post(`/v1/projects/${project.id}/merchants`, { name: 'bench', payTo: privateKeyToAccount(generatePrivateKey()).address });
const payerKey = generatePrivateKey();
await server.ctx.chain.devchain!.fund(privateKeyToAccount(payerKey).address, '100000');

console.log(`BENCH_READY ${JSON.stringify({ api, apiKey: apiKey.secret, merchantId: merchant.id, payTo: merchant.payTo, payerKey })}`);
