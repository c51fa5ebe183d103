// Facilitator throughput on the devchain: verify (no chain write) and settle (one transferWithAuthorization
// each), over HTTP to the facilitator origin and as direct calls into the engine.
// Targets: >= 2,000 verifications/s and >= 100 settlements/s. Run: npx tsx bench/facilitator/run.ts
// Env: BENCH_VERIFY (payloads per verify round, default 4000), BENCH_SETTLE (default 600),
//      BENCH_CONCURRENCY (default 64), BENCH_PAYERS (default 32), DATABASE_URL (PostgreSQL instead of PGlite).
import fs from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import pino from 'pino';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { openTestDatabase } from '../../test/helpers/database.js';
import { signAuthorization } from '../../test/x402/support.js';
import { machine } from '../lib.js';

const verifyCount = Number(process.env.BENCH_VERIFY ?? 4000);
const settleCount = Number(process.env.BENCH_SETTLE ?? 600);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 32);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-facilitator-'));
// A fresh database: in-memory PGlite, or a new database on the PostgreSQL server DATABASE_URL names.
const testDatabase = await openTestDatabase();
const database = testDatabase.database;
// One load-generating client: lift the per-client limits of /verify and /settle (they still count every request).
const config = loadConfig({
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  FACILITATOR_SETTLE_LIMIT_PER_CLIENT: '1000000000',
  FACILITATOR_VERIFY_LIMIT_PER_CLIENT: '1000000000',
});
const server = await startServer({ config, roles: ['facilitator'], database, ephemeralSecrets: true, adminSocket: false, log: pino({ level: 'warn' }) });

try {
  const { ctx } = server;
  const facilitator = ctx.facilitator!;
  const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
  for (const payer of payers) await ctx.chain.devchain!.fund(payer.address, '1000');
  const requirements = ctx.x402.requirements({
    url: 'http://bench/resource',
    description: 'bench',
    mimeType: 'application/json',
    amount: '100',
    payTo: privateKeyToAccount(generatePrivateKey()).address,
  });
  const sign = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));

  console.log(`machine: ${machine()}; database ${database.kind}; concurrency ${concurrency}; ${payerCount} payers`);
  // node:http with keep-alive: a lighter load generator than fetch, which shares the 2 cores with the server.
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(server.urls.facilitator);
  const http = (p: 'verify' | 'settle') => (payload: PaymentPayload) =>
    new Promise<boolean>((resolve, reject) => {
      const body = JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements });
      const req = request(
        { agent, host: target.hostname, port: target.port, path: `/${p}`, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const parsed = JSON.parse(Buffer.concat(chunks).toString()) as { isValid?: boolean; success?: boolean };
            resolve(res.statusCode === 200 && (parsed.isValid ?? parsed.success) === true);
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const direct = (p: 'verify' | 'settle') => async (payload: PaymentPayload) => {
    const r = p === 'verify' ? await facilitator.verify(payload, requirements) : await facilitator.settle(payload, requirements);
    return 'isValid' in r ? r.isValid : r.success;
  };

  // Warm-up: JIT, connections, the SDK's asset-code cache.
  await measure('warm-up', await sign(200), http('verify'), requirements);

  const rows: string[] = [];
  rows.push(await measure('verify over HTTP', await sign(verifyCount), http('verify'), requirements));
  rows.push(await measure('verify, direct call', await sign(verifyCount), direct('verify'), requirements));
  rows.push(await measure('settle over HTTP', await sign(settleCount), http('settle'), requirements));
  rows.push(await measure('settle, direct call', await sign(settleCount), direct('settle'), requirements));
  console.log(['', '| operation | count | ok | seconds | per second | p50 ms | p99 ms |', '|---|---|---|---|---|---|---|', ...rows].join('\n'));
} finally {
  await server.stop();
  await testDatabase.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function measure(label: string, payloads: PaymentPayload[], call: (p: PaymentPayload) => Promise<boolean>, _r: PaymentRequirements): Promise<string> {
  const latencies: number[] = [];
  let ok = 0;
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, payloads.length) }, async () => {
      while (next < payloads.length) {
        const payload = payloads[next++];
        const t = performance.now();
        if (await call(payload).catch(() => false)) ok += 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(1);
  const row = `| ${label} | ${payloads.length} | ${ok} | ${seconds.toFixed(2)} | ${(payloads.length / seconds).toFixed(0)} | ${pct(0.5)} | ${pct(0.99)} |`;
  console.log(row);
  return row;
}
