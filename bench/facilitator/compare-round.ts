// One round against the Tollgate tree at BENCH_TREE (default: this checkout), printed as one JSON line:
// verify over HTTP and as direct calls (BENCH_VERIFY payments each), then settles as direct calls into the
// tree's own facilitator (BENCH_SETTLE, its default relayer: one key), after a warm-up. Spawned by
// compare.ts once per tree per round, so old and new code run in fresh processes side by side.
import fs from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { facilitatorBenchEnv } from '../lib.js';

const tree = path.resolve(process.env.BENCH_TREE ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../..'));
const count = Number(process.env.BENCH_VERIFY ?? 4000);
const settleCount = Number(process.env.BENCH_SETTLE ?? 600);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 32);

const { loadConfig } = await import(path.join(tree, 'src/config.ts'));
const { startServer } = await import(path.join(tree, 'src/server.ts'));
const { openTestDatabase } = await import(path.join(tree, 'test/helpers/database.ts'));
const { signAuthorization } = await import(path.join(tree, 'test/x402/support.ts'));

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-verify-'));
const testDatabase = await openTestDatabase();
const config = loadConfig(facilitatorBenchEnv(dataDir));
const server = await startServer({ config, roles: ['facilitator'], database: testDatabase.database, ephemeralSecrets: true, adminSocket: false, log: pino({ level: 'warn' }) });
try {
  const { ctx } = server;
  const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
  for (const payer of payers) await ctx.chain.devchain.fund(payer.address, '1000');
  const requirements = ctx.x402.requirements({ url: 'http://bench/resource', description: 'bench', mimeType: 'application/json', amount: '100', payTo: privateKeyToAccount(generatePrivateKey()).address });
  const sign = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(server.urls.facilitator);
  const overHttp = (payload: unknown) =>
    new Promise<boolean>((resolve, reject) => {
      const body = JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements });
      const req = request({ agent, host: target.hostname, port: target.port, path: '/verify', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(res.statusCode === 200 && JSON.parse(Buffer.concat(chunks).toString()).isValid === true));
      });
      req.on('error', reject);
      req.end(body);
    });
  const direct = async (payload: unknown) => (await ctx.facilitator.verify(payload, requirements)).isValid === true;
  const settle = async (payload: unknown) => (await ctx.facilitator.settle(payload, requirements)).success === true;
  await rate(await sign(200), overHttp);
  await rate(await sign(64), settle);
  const http = await rate(await sign(count), overHttp);
  const directRate = await rate(await sign(count), direct);
  const settleRate = await rate(await sign(settleCount), settle);
  console.log(JSON.stringify({ tree, http, direct: directRate, settle: settleRate }));
} finally {
  await server.stop();
  await testDatabase.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function rate(payloads: unknown[], call: (p: unknown) => Promise<boolean>): Promise<{ perSecond: number; ok: number }> {
  let next = 0;
  let ok = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, payloads.length) }, async () => {
      while (next < payloads.length) if (await call(payloads[next++]).catch(() => false)) ok += 1;
    }),
  );
  return { perSecond: payloads.length / ((performance.now() - started) / 1000), ok };
}
