// Facilitator throughput on the devchain, all in one run, several rounds (median and spread), each round on
// a fresh server, devchain and database:
// - verify over HTTP and as direct calls (no chain write);
// - the devchain's own ceiling: pre-signed transferWithAuthorization transactions from BENCH_CEILING_KEYS fresh
//   keys sent straight to anvil (node:http keep-alive, raw JSON-RPC), timed until every one is mined;
// - settle as direct calls into engines built the same way, for each of BENCH_KEY_SETS relayer keys, batched
//   (Multicall3, the shipped defaults) and unbatched (FACILITATOR_BATCH_MAX_CALLS 1), on loopback and through an
//   RPC that answers BENCH_RPC_DELAY_MS late (a hosted node's round trip); plus batched settle over HTTP;
// - p50/p99 latency of each at BENCH_CONCURRENCY in flight.
// Targets (issue 30, tightened by issue 46): batched >= 50 % of the ceiling with 1 and 4 keys; batched >= 5x unbatched;
// p50 <= 150 ms batched at 64 in flight.
// Run: npx tsx bench/facilitator/run.ts
// Env: BENCH_ROUNDS (default 3), BENCH_VERIFY (payloads per verify round, default 2000), BENCH_SETTLE (batched
//      settles per row, default 1200), BENCH_UNBATCHED (default 300), BENCH_KEY_SETS (default 1,4,16),
//      BENCH_CEILING_KEYS (default 4), BENCH_RPC_DELAY_MS (default 20; 0 skips those rows), BENCH_CONCURRENCY
//      (default 64), BENCH_PAYERS (default 64), BENCH_BATCH_WAIT_MS / BENCH_BATCH_MAX / BENCH_BATCH_IDLE (override the defaults),
//      DATABASE_URL (PostgreSQL instead of PGlite).
import fs from 'node:fs';
import http, { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { PaymentPayload } from '@x402/core/types';
import pino from 'pino';
import { encodeFunctionData, parseSignature, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config.js';
import { eip3009Abi } from '../../src/chain/eip3009.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { Facilitator } from '../../src/x402/facilitator/facilitator.js';
import { openTestDatabase } from '../../test/helpers/database.js';
import { signAuthorization } from '../../test/x402/support.js';
import { facilitatorBenchEnv, machine } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const verifyCount = Number(process.env.BENCH_VERIFY ?? 2000);
const settleCount = Number(process.env.BENCH_SETTLE ?? 1200);
const unbatchedCount = Number(process.env.BENCH_UNBATCHED ?? 300);
const P50_TARGET_MS = 150;
const keySets = (process.env.BENCH_KEY_SETS ?? '1,4,16').split(',').map(Number);
const ceilingKeyCount = Number(process.env.BENCH_CEILING_KEYS ?? 4);
const rpcDelayMs = Number(process.env.BENCH_RPC_DELAY_MS ?? 20);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 64);
const batchOverride = {
  waitMs: process.env.BENCH_BATCH_WAIT_MS ? Number(process.env.BENCH_BATCH_WAIT_MS) : undefined,
  maxCalls: process.env.BENCH_BATCH_MAX ? Number(process.env.BENCH_BATCH_MAX) : undefined,
  idle: process.env.BENCH_BATCH_IDLE as 'send' | 'wait' | undefined,
};
const maxKeys = Math.max(...keySets);

const log = pino({ level: 'warn' });
const results = new Map<string, Row[]>();
const record = (row: Row) => results.set(row.label, [...(results.get(row.label) ?? []), row]);
console.log(`machine: ${machine()}; load average ${uptimeLoad()}; concurrency ${concurrency}; ${payerCount} payers; keys ${keySets.join('/')}; ${rounds} rounds`);
// Each round on a fresh server, devchain and database: anvil slows down as a long run piles up blocks
// (seen as falling rates round after round in one process), which would favour whichever side ran first.
for (let round = 1; round <= rounds; round += 1) {
  console.log(`-- round ${round} (load average ${uptimeLoad()})`);
  await runRound(round);
}

const summary = [...results.entries()].map(([label, rows]) => {
  const rates = rows.map((r) => r.perSecond).sort((a, b) => a - b);
  return { label, rates, median: median(rates), okAll: rows.every((r) => r.ok === r.count), p50: median(rows.map((r) => r.p50)), p99: median(rows.map((r) => r.p99)) };
});
const ms = (v: number) => (Number.isNaN(v) ? '—' : v.toFixed(0));
console.log(['', `| operation | rounds (per second) | median /s | spread (min–max) | all ok | p50 ms | p99 ms |`, '|---|---|---|---|---|---|---|',
  ...summary.map((s) => `| ${s.label} | ${s.rates.map((r) => r.toFixed(0)).join(' / ')} | **${s.median.toFixed(0)}** | ${s.rates[0].toFixed(0)}–${s.rates[s.rates.length - 1].toFixed(0)} | ${s.okAll ? 'yes' : 'NO'} | ${ms(s.p50)} | ${ms(s.p99)} |`)].join('\n'));
// Ratios per round (same round, same devchain), then their median and spread.
const perRound = (a: string, b: string) => (results.get(a) ?? []).map((row, i) => row.perSecond / (results.get(b)?.[i]?.perSecond ?? NaN)).sort((x, y) => x - y);
const verdict = (name: string, ratios: number[], target: number, unit: 'x' | '%') => {
  const show = (v: number) => (unit === '%' ? `${(v * 100).toFixed(0)} %` : `${v.toFixed(2)}x`);
  const m = median(ratios);
  console.log(`${name}: ${show(m)} (rounds ${ratios.map(show).join(', ')}) — ${m >= target ? 'PASS' : 'MISS'} (target >= ${show(target)})`);
};
const ceilingLabel = `ceiling: pre-signed transfers, ${ceilingKeyCount} keys`;
console.log('');
for (const keys of keySets) {
  verdict(`batched vs ceiling, ${keys} keys`, perRound(settleLabel(keys, true, false), ceilingLabel), 0.5, '%');
  verdict(`batched vs unbatched, ${keys} keys, loopback`, perRound(settleLabel(keys, true, false), settleLabel(keys, false, false)), 5, 'x');
  if (rpcDelayMs > 0) verdict(`batched vs unbatched, ${keys} keys, RPC +${rpcDelayMs} ms`, perRound(settleLabel(keys, true, true), settleLabel(keys, false, true)), 5, 'x');
}
const p50 = summary.find((s) => s.label === settleLabel(Math.min(...keySets), true, false))?.p50 ?? NaN;
console.log(`p50 settle latency, batched, ${concurrency} in flight (${Math.min(...keySets)} key): ${p50.toFixed(0)} ms — ${p50 <= P50_TARGET_MS ? 'PASS' : 'MISS'} (target <= ${P50_TARGET_MS} ms)`);
console.log(`load average at the end: ${uptimeLoad()}`);

function settleLabel(keys: number, batched: boolean, slow: boolean): string {
  return `settle, ${batched ? 'batched' : 'unbatched'}, ${keys} key${keys === 1 ? '' : 's'}${slow ? `, RPC +${rpcDelayMs} ms` : ''}`;
}

async function runRound(round: number): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-facilitator-'));
  // A fresh database: in-memory PGlite, or a new database on the PostgreSQL server DATABASE_URL names.
  const testDatabase = await openTestDatabase();
  const database = testDatabase.database;
  const config = loadConfig({
    ...facilitatorBenchEnv(dataDir),
    FACILITATOR_RELAYER_COUNT: String(maxKeys),
    ...(batchOverride.maxCalls && { FACILITATOR_BATCH_MAX_CALLS: String(batchOverride.maxCalls) }),
    ...(batchOverride.idle && { FACILITATOR_BATCH_IDLE: batchOverride.idle }),
    ...(batchOverride.waitMs !== undefined && { FACILITATOR_BATCH_WAIT_MS: String(batchOverride.waitMs) }),
  });
  const server = await startServer({ config, roles: ['facilitator'], database, ephemeralSecrets: true, adminSocket: false, log });
  let proxy: http.Server | null = null;
  try {
    const { ctx } = server;
    if (round === 1) console.log(`database ${database.kind}`);
    const devchain = ctx.chain.devchain!;
    const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
    for (const payer of payers) await devchain.fund(payer.address, '10000');
    const requirements = ctx.x402.requirements({
      url: 'http://bench/resource',
      description: 'bench',
      mimeType: 'application/json',
      amount: '100',
      payTo: privateKeyToAccount(generatePrivateKey()).address,
    });
    const sign = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payers.length], requirements)));

    // Engines built the same way, one per (keys, batching, RPC): the server's own engine is the batched full pool.
    const pool = ctx.chain.relayers;
    const engine = (keys: number, batched: boolean, rpcUrl = ctx.chain.rpcUrl) =>
      new Facilitator(
        { db: ctx.db, clock: ctx.clock, log, chain: { ...ctx.chain, rpcUrl }, relayer: pool.slice(0, keys) },
        { reconcileAfterMs: config.facilitatorReconcileAfterMs, batch: batched ? batchOverride : { maxCalls: 1 } },
      );
    // The slow RPC: every JSON-RPC request to anvil answered rpcDelayMs late.
    let slowUrl: string | null = null;
    if (rpcDelayMs > 0) {
      proxy = await delayProxy(ctx.chain.rpcUrl, rpcDelayMs);
      slowUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    }

    // node:http with keep-alive: a lighter load generator than fetch, which shares the 2 cores with the server.
    const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
    const target = new URL(server.urls.facilitator);
    const overHttp = (p: 'verify' | 'settle') => (payload: PaymentPayload) =>
      postJson(agent, target, `/${p}`, { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }).then(
        ({ status, body }) => status === 200 && ((body as { isValid?: boolean; success?: boolean }).isValid ?? (body as { success?: boolean }).success) === true,
      );
    const direct = (f: Facilitator, p: 'verify' | 'settle') => async (payload: PaymentPayload) => {
      const r = p === 'verify' ? await f.verify(payload, requirements) : await f.settle(payload, requirements);
      return 'isValid' in r ? r.isValid : r.success;
    };

    // Warm-up: JIT, connections, the SDK's asset-code cache, every lane's fee cache.
    await measure('warm-up verify', await sign(200), overHttp('verify'));
    await measure('warm-up settle', await sign(128), overHttp('settle'));
    const ceilingKeys = Array.from({ length: ceilingKeyCount }, () => privateKeyToAccount(generatePrivateKey()));
    for (const key of ceilingKeys) await devchain.fundGas(key.address);

    record(await measure('verify over HTTP', await sign(verifyCount), overHttp('verify')));
    record(await measure('verify, direct call', await sign(verifyCount), direct(ctx.facilitator!, 'verify')));
    record(await ceiling(server, ceilingKeys, await sign(settleCount)));
    record(await measure(`settle over HTTP, batched, ${maxKeys} keys`, await sign(settleCount), overHttp('settle')));
    // Each (keys, RPC) pair batched and unbatched back to back, which first alternating per round, so a drift in
    // machine load does not favour one side.
    for (const slow of slowUrl ? [false, true] : [false]) {
      for (const keys of keySets) {
        const pair = [true, false].map((batched) => async () => {
          const f = engine(keys, batched, slow ? slowUrl! : undefined);
          await measure('warm-up settle', await sign(16), direct(f, 'settle'));
          record(await measure(settleLabel(keys, batched, slow), await sign(batched ? settleCount : unbatchedCount), direct(f, 'settle')));
        });
        for (const run of round % 2 ? pair : pair.reverse()) await run();
      }
    }
    agent.destroy();
  } finally {
    proxy?.closeAllConnections();
    await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
    await server.stop();
    await testDatabase.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

interface Row {
  label: string;
  count: number;
  ok: number;
  perSecond: number;
  p50: number;
  p99: number;
}

async function measure(label: string, payloads: PaymentPayload[], call: (p: PaymentPayload) => Promise<boolean>): Promise<Row> {
  const latencies: number[] = [];
  let ok = 0;
  let next = 0;
  const cpuBefore = process.cpuUsage();
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
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  const row = { label, count: payloads.length, ok, perSecond: payloads.length / seconds, p50: pct(0.5), p99: pct(0.99) };
  console.log(`${label}: ${ok}/${payloads.length} ok in ${seconds.toFixed(2)} s = ${row.perSecond.toFixed(0)}/s (p50 ${pct(0.5).toFixed(1)} ms, p99 ${pct(0.99).toFixed(1)} ms; this process's CPU ${((cpu.user + cpu.system) / payloads.length).toFixed(0)} µs per call)`);
  return row;
}

/**
 * The devchain's own ceiling: the same transferWithAuthorization calls, signed in advance by `keys`
 * (consecutive nonces each), sent straight to anvil with `concurrency` requests in flight; timed from
 * the first send until every key's mined nonce count reached its last transaction.
 */
async function ceiling(server: RunningServer, keys: ReturnType<typeof privateKeyToAccount>[], payloads: PaymentPayload[]): Promise<Row> {
  const { ctx } = server;
  const client = ctx.chain.publicClient;
  const fees = await client.estimateFeesPerGas();
  const bases = await Promise.all(keys.map((k) => client.getTransactionCount({ address: k.address, blockTag: 'pending' })));
  const raws: Hex[] = [];
  for (const [i, payload] of payloads.entries()) {
    const k = i % keys.length;
    const { authorization: a, signature } = payload.payload as { authorization: Record<string, string>; signature: Hex };
    const { v, r, s } = parseSignature(signature);
    const data = encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [a.from as Address, a.to as Address, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce as Hex, Number(v), r, s],
    });
    raws.push(
      await keys[k].signTransaction({
        chainId: ctx.chain.chainId,
        nonce: bases[k] + Math.floor(i / keys.length),
        to: ctx.chain.asset.address,
        data,
        gas: 150_000n,
        maxFeePerGas: fees.maxFeePerGas * 4n,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      }),
    );
  }
  const balanceBefore = await ctx.chain.devchain!.balanceOf(requirementsPayTo(payloads[0]));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const rpc = new URL(ctx.chain.rpcUrl);
  let next = 0;
  let refused = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < raws.length) {
        const raw = raws[next++];
        const { body } = await postJson(agent, rpc, '/', { jsonrpc: '2.0', id: 1, method: 'eth_sendRawTransaction', params: [raw] });
        if ((body as { error?: unknown }).error) refused += 1;
      }
    }),
  );
  const targets = keys.map((_, k) => bases[k] + Math.ceil((raws.length - k) / keys.length));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const counts = await Promise.all(keys.map((key) => client.getTransactionCount({ address: key.address, blockTag: 'latest' })));
    if (counts.every((c, k) => c >= targets[k]) || refused > 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  const moved = (await ctx.chain.devchain!.balanceOf(requirementsPayTo(payloads[0]))) - balanceBefore;
  const ok = Number(moved / BigInt((payloads[0].payload as { authorization: { value: string } }).authorization.value));
  const row = { label: `ceiling: pre-signed transfers, ${keys.length} keys`, count: raws.length, ok, perSecond: raws.length / seconds, p50: NaN, p99: NaN };
  console.log(`${row.label}: ${ok}/${raws.length} moved in ${seconds.toFixed(2)} s = ${row.perSecond.toFixed(0)}/s${refused ? ` (${refused} refused)` : ''}`);
  return row;
}

function requirementsPayTo(payload: PaymentPayload): Address {
  return (payload.payload as { authorization: { to: Address } }).authorization.to;
}

function postJson(agent: Agent, target: URL, pathname: string, body: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      { agent, host: target.hostname, port: target.port, path: pathname, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** Forwards JSON-RPC to `upstream`, answering each request `delayMs` later (a remote node's round trip). */
async function delayProxy(upstream: string, delayMs: number): Promise<http.Server> {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(upstream);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const forward = request(
        { agent, host: target.hostname, port: target.port, path: '/', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } },
        (up) => {
          const out: Buffer[] = [];
          up.on('data', (c: Buffer) => out.push(c));
          up.on('end', () => setTimeout(() => res.writeHead(up.statusCode ?? 502, { 'content-type': 'application/json' }).end(Buffer.concat(out)), delayMs));
        },
      );
      forward.on('error', () => res.writeHead(502).end());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function uptimeLoad(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}
