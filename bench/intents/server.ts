// The service for the intents bench, in its own process: api, facilitator and worker roles on the
// devchain, over the PostgreSQL database run.ts created. Sets up one user, project, key, merchant
// and a funded payer, prints one `BENCH_READY {json}` line, stops on SIGTERM.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig, ROLES } from '../../src/config.js';
import { startServer } from '../../src/server.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-intents-'));
const config = loadConfig({
  ...process.env,
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  RELAY_PORT: '0',
  ASSETS_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  DATABASE_URL: process.env.BENCH_DATABASE_URL!,
  // The pay-flow loop comes from one address; the bench measures latency, not the limiter.
  INTENT_PAY_LIMIT_PER_CLIENT: '100000',
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
