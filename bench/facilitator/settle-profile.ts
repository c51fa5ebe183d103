// Where one batched settle's time goes: the facilitator role in-process, one engine (BENCH_KEYS relayer keys,
// the shipped batching), BENCH_SETTLE pre-signed settles at BENCH_CONCURRENCY in flight, and for that window only:
// the process's CPU (user + system) per settle, JSON-RPC requests and calls per settle by method, SQL statements per
// settle by kind, anvil's CPU per settle (from /proc), and with BENCH_PROFILE=<file> a V8 CPU profile of the window.
// Run: DATABASE_URL=postgres://… npx tsx bench/facilitator/settle-profile.ts
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { execFileSync } from 'node:child_process';
import type { PaymentPayload } from '@x402/core/types';
import pino from 'pino';
import { parseTransaction, toFunctionSelector, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { Facilitator } from '../../src/x402/facilitator/facilitator.js';
import { openTestDatabase } from '../../test/helpers/database.js';
import { signAuthorization } from '../../test/x402/support.js';
import { facilitatorBenchEnv, machine } from '../lib.js';

const settleCount = Number(process.env.BENCH_SETTLE ?? 1200);
const keys = Number(process.env.BENCH_KEYS ?? 1);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 64);
const profileFile = process.env.BENCH_PROFILE;
const log = pino({ level: 'warn' });

// JSON-RPC requests (HTTP) and calls (batch members) by method, counted where a body is written: the facilitator's
// transport (src/chain/rpc-fetch.ts) writes each request with node:http's request().end(body).
const rpc = { requests: 0, calls: new Map<string, number>(), batchSizes: [] as number[] };
const AGGREGATE3_SELECTOR = toFunctionSelector('aggregate3((address,bool,bytes)[])');
/** How many settlement calls a sent transaction carries: aggregate3's array length, else 1. */
const callsCarried = (raw: Hex): number => {
  const data = parseTransaction(raw).data ?? '0x';
  return data.startsWith(AGGREGATE3_SELECTOR) ? Number(BigInt(`0x${data.slice(74, 138)}`)) : 1;
};
let counting = false;
const realRequest = http.request;
http.request = ((...args: Parameters<typeof http.request>) => {
  const request = realRequest(...args);
  const end = request.end.bind(request);
  request.end = ((body?: unknown, ...rest: unknown[]) => {
    if (counting && typeof body === 'string') {
      rpc.requests += 1;
      const parsed = JSON.parse(body) as { method: string } | { method: string }[];
      for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
        rpc.calls.set(call.method, (rpc.calls.get(call.method) ?? 0) + 1);
        if (call.method === 'eth_sendRawTransaction') rpc.batchSizes.push(callsCarried((call as unknown as { params: [Hex] }).params[0]));
      }
    }
    return end(body as never, ...(rest as []));
  }) as typeof request.end;
  return request;
}) as typeof http.request;

console.log(`machine: ${machine()}; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ${settleCount} settles, ${keys} key(s), ${concurrency} in flight`);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-settle-profile-'));
const testDatabase = await openTestDatabase();
const config = loadConfig({ ...facilitatorBenchEnv(dataDir), FACILITATOR_RELAYER_COUNT: String(keys) });
const server = await startServer({ config, roles: ['facilitator'], database: testDatabase.database, ephemeralSecrets: true, adminSocket: false, log });
const sql = new Map<string, number>();
try {
  const { ctx } = server;
  const devchain = ctx.chain.devchain!;
  const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
  for (const payer of payers) await devchain.fund(payer.address, '10000');
  const requirements = ctx.x402.requirements({ url: 'http://bench/resource', description: 'bench', mimeType: 'application/json', amount: '100', payTo: privateKeyToAccount(generatePrivateKey()).address });
  const sign = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));
  const f = new Facilitator({ db: ctx.db, clock: ctx.clock, log, chain: ctx.chain, relayer: ctx.chain.relayers.slice(0, keys) }, { reconcileAfterMs: config.facilitatorReconcileAfterMs });
  const settle = async (p: PaymentPayload) => (await f.settle(p, requirements)).success;
  await run(await sign(200), settle);
  const payloads = await sign(settleCount);
  testDatabase.database.observeQueries((kind) => counting && sql.set(kind, (sql.get(kind) ?? 0) + 1));
  const anvilPid = execFileSync('pgrep', ['-n', '-f', `anvil.*--port ${new URL(ctx.chain.rpcUrl).port}`]).toString().trim();
  const session = new Session();
  if (profileFile) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
  }
  const anvilBefore = procCpu(anvilPid);
  const cpuBefore = process.cpuUsage();
  counting = true;
  const started = performance.now();
  const { ok, latencies } = await run(payloads, settle);
  const seconds = (performance.now() - started) / 1000;
  counting = false;
  const cpu = process.cpuUsage(cpuBefore);
  const anvilCpu = procCpu(anvilPid) - anvilBefore;
  if (profileFile) {
    const { profile } = await session.post('Profiler.stop');
    fs.writeFileSync(profileFile, JSON.stringify(profile));
    session.disconnect();
  }
  latencies.sort((a, b) => a - b);
  const per = (n: number) => (n / settleCount).toFixed(2);
  console.log(`settled ${ok}/${settleCount} in ${seconds.toFixed(2)} s = ${(settleCount / seconds).toFixed(0)}/s, p50 ${latencies[Math.floor(latencies.length / 2)]!.toFixed(0)} ms`);
  console.log(`facilitator process CPU per settle: ${((cpu.user + cpu.system) / settleCount).toFixed(0)} µs (user ${(cpu.user / settleCount).toFixed(0)}, system ${(cpu.system / settleCount).toFixed(0)})`);
  console.log(`anvil CPU per settle: ${((anvilCpu * 1e6) / settleCount).toFixed(0)} µs`);
  console.log(`JSON-RPC HTTP requests per settle: ${per(rpc.requests)}; calls per settle: ${[...rpc.calls].sort((a, b) => b[1] - a[1]).map(([m, n]) => `${m} ${per(n)}`).join(', ')}`);
  const sizes = rpc.batchSizes.sort((a, b) => a - b);
  const share = (test: (n: number) => boolean) => `${((sizes.filter(test).length / sizes.length) * 100).toFixed(0)} %`;
  console.log(
    `calls per sent transaction: mean ${(sizes.reduce((a, b) => a + b, 0) / sizes.length).toFixed(1)}, p50 ${sizes[Math.floor(sizes.length / 2)]}, max ${sizes.at(-1)};` +
      ` ${sizes.reduce((a, b) => a + b, 0)} calls in ${sizes.length} transactions for ${settleCount} settles;` +
      ` transactions of 1 call ${share((n) => n === 1)}, 2-4 ${share((n) => n >= 2 && n <= 4)}, 5-16 ${share((n) => n >= 5 && n <= 16)}, over 16 ${share((n) => n > 16)}`,
  );
  console.log(`SQL statements per settle: ${[...sql].map(([k, n]) => `${k} ${per(n)}`).join(', ')}`);
} finally {
  await server.stop();
  await testDatabase.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

async function run(payloads: PaymentPayload[], call: (p: PaymentPayload) => Promise<boolean>) {
  const latencies: number[] = [];
  let ok = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, payloads.length) }, async () => {
      while (next < payloads.length) {
        const payload = payloads[next++]!;
        const t = performance.now();
        if (await call(payload).catch(() => false)) ok += 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { ok, latencies };
}

/** A process's user + system CPU seconds, from /proc (clock ticks of 1/100 s). */
function procCpu(pid: string): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
