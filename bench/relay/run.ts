// The MPP payment relay beside the facilitator it settles through, in one run, several rounds (median, spread):
// 1. validate/s — pre-built mppx credentials POSTed to the relay origin's `/v1/mpp/validate` — beside
//    verify/s — the same number of x402 exact EIP-3009 payloads POSTed to the facilitator origin's `/verify`;
// 2. broadcast/s — credentials POSTed to `/v1/mpp/broadcast`, each with its own Idempotency-Key — beside
//    settle/s — payloads POSTed to the facilitator origin's `/settle`.
// Targets: validate ≥ 0.8 × verify and broadcast ≥ 0.8 × settle (the relay adds parsing, not cost).
//
// Per round: two fresh servers built the same way (roles facilitator + relay, an ephemeral devchain and a fresh
// database each, the facilitator's per-client / per-payer / per-payTo limits lifted but still counted), one for
// the relay side, one for the facilitator side, so neither side's devchain carries the other's blocks (anvil
// slows as blocks pile up: bench/facilitator/run.ts). The same 32 fresh payers are funded on both devchains; both
// sides pay the same amount to the same recipient with the same concurrency. Credentials are built by mppx's own
// merchant server and EVM client (test/relay/mppx-client.ts) and payloads signed by signAuthorization, both
// before the timing and per round (an mppx credential's validBefore is 5 minutes after it is built); the request
// bodies are serialized before the timing too (client work). The credential goes as the serialized
// `Payment …` string, as a merchant's server receives it in the Authorization header. Warm-up on each server
// first (its own kind of operations), then the pairs; which side of a pair goes first alternates per round.
// Every validate must answer 200 accepted, every verify isValid, every broadcast 200 with a success receipt,
// every settle success, and the recipient's balance must have moved N × amount on both devchains.
//
// Run: npx tsx bench/relay/run.ts (PGlite in memory), or with DATABASE_URL=postgres://postgres@127.0.0.1:5432/test
// (a fresh database per server on that PostgreSQL, dropped after).
// Env: BENCH_ROUNDS (5), BENCH_VALIDATE (2000 per side per round), BENCH_BROADCAST (300 per side per round),
//      BENCH_CONCURRENCY (64), BENCH_PAYERS (32), BENCH_WARMUP (64 broadcasts / settles, 4× as many validates / verifies, per server), BENCH_KEYS (relayer keys;
//      default the shipped default, 1), BENCH_ONLY (relay | facilitator: one side, for profiling; no ratio),
//      BENCH_PAIRS (1: validate/verify pairs per round, the same prepared calls again, which side goes first alternating
//      pair by pair; validate and verify spend nothing, so more pairs are cheap samples of the ratio on a noisy machine),
//      BENCH_PROFILE (a directory: a V8 CPU profile of each timed phase alone, `<kind>-<n>.cpuprofile`, sampled every
//      100 µs, and its sampled allocations, `<kind>-<n>.heapprofile` (DevTools reads both); summarize the CPU profile with
//      bench/relay/profile-summary.ts; the profiler roughly doubles the CPU per operation, so compare shares, not µs).
// Each phase also reports RPC/op: the devchain JSON-RPC requests (fetch calls) per operation, i.e. how many verifies
// share one quick-check eth_call.
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import pino from 'pino';
import { formatUnits } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Role } from '../../src/platform/server-settings.js';
import { buildTestApp } from '../../test/helpers/test-app.js';
import { mppxCredential } from '../../test/relay/mppx-client.js';
import { signAuthorization } from '../../test/x402/support.js';
import { machine } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const pairs = Number(process.env.BENCH_PAIRS ?? 1);
const validateCount = Number(process.env.BENCH_VALIDATE ?? 2000);
const broadcastCount = Number(process.env.BENCH_BROADCAST ?? 300);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 32);
const warmup = Number(process.env.BENCH_WARMUP ?? 64);
const keys = process.env.BENCH_KEYS;
const only = process.env.BENCH_ONLY as 'relay' | 'facilitator' | undefined;
const profileDir = process.env.BENCH_PROFILE;
const AMOUNT = 10_000n; // 0.01 USDG
// One load-generating client and a few payers: the facilitator's and the relay's limits lifted (they still count).
const LIFTED = Object.fromEntries([
  ...['SETTLE_LIMIT_PER_CLIENT', 'VERIFY_LIMIT_PER_CLIENT', 'SETTLE_LIMIT_PER_PAYER', 'SETTLE_LIMIT_PER_PAY_TO'].map((k) => `FACILITATOR_${k}`),
  ...['BROADCAST_LIMIT_PER_CLIENT', 'VALIDATE_LIMIT_PER_CLIENT'].map((k) => `RELAY_${k}`),
].map((k) => [k, '1000000000']));
const ROLES: Role[] = ['facilitator', 'relay'];
const log = pino({ level: 'error' });
// A full GC before each timed phase: building thousands of credentials leaves garbage that would otherwise be
// collected during whichever phase runs first (seen as a first-goes-slower pattern in a first version).
v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const loadText = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
// viem's http transport (the servers' chain client) goes through fetch, the load generator through node:http:
// counting fetch calls per phase shows how well concurrent checks share an eth_call (quick-check.ts batches them).
let fetches = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = (...args: Parameters<typeof fetch>) => {
  fetches += 1;
  return realFetch(...args);
};

type Kind = 'validate' | 'verify' | 'broadcast' | 'settle';
interface Row {
  kind: Kind;
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU of this process (servers + load generator + PGlite) per operation, ms. */
  cpuMs: number;
  /** JSON-RPC requests to the devchain (fetch calls, both servers share this process) per operation. */
  rpcPerOp: number;
  ok: boolean;
}
/** One prepared request: where it goes, its serialized body and headers, and how to tell its answer is right. */
interface Call {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
  good: (status: number, answer: any) => boolean;
}

const started = new Date();
console.log(
  `machine: ${machine()}; load average ${loadText()}; database ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}; ${rounds} rounds; ` +
    `${validateCount} validate/verify and ${broadcastCount} broadcast/settle per side per round; ${concurrency} in flight; ${payerCount} payers; ` +
    `${keys ?? 'default (1)'} relayer key(s); ${pairs} validate/verify pair(s) per round; ${warmup} warm-up settles/broadcasts and ${4 * warmup} verifies/validates per server`,
);
const rows: Row[] = [];
for (let round = 1; round <= rounds; round += 1) {
  console.log(`-- round ${round} (load average ${loadText()})`);
  const sides = await Promise.all([only !== 'facilitator' && side('relay'), only !== 'relay' && side('facilitator')]);
  try {
    const live = sides.filter((s) => s !== false);
    const ordered = (pair: number) => ((round + pair) % 2 ? live : [...live].reverse());
    for (let pair = 0; pair < pairs; pair += 1) for (const s of ordered(pair)) rows.push(await s.first());
    for (const s of ordered(0)) rows.push(await s.second());
  } finally {
    for (const s of sides) if (s) await s.close();
  }
}

// --- report
const of = (kind: Kind) => rows.filter((r) => r.kind === kind);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const list = (xs: number[], digits = 0) => xs.map((x) => x.toFixed(digits)).join(' / ');
const spread = (xs: number[], digits = 0) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
const LABELS: Record<Kind, string> = {
  validate: '`POST /v1/mpp/validate` (relay origin)',
  verify: '`POST /verify` (facilitator origin)',
  broadcast: '`POST /v1/mpp/broadcast` (relay origin)',
  settle: '`POST /settle` (facilitator origin)',
};
const table = ['', '| operation | rounds (per second) | median | spread | p50 / p99 ms (median) | CPU ms/op (median) | all ok + chain moved |', '|---|---|---|---|---|---|---|'];
for (const kind of ['validate', 'verify', 'broadcast', 'settle'] as const) {
  const rs = of(kind);
  if (rs.length === 0) continue;
  const rates = rs.map((r) => r.perSecond);
  table.push(
    `| ${LABELS[kind]} | ${list(rates)} | **${median(rates).toFixed(0)} /s** | ${spread(rates)} | ${median(rs.map((r) => r.p50)).toFixed(0)} / ${median(rs.map((r) => r.p99)).toFixed(0)} | ` +
      `${median(rs.map((r) => r.cpuMs)).toFixed(2)} | ${rs.every((r) => r.ok) ? 'yes' : 'NO'} |`,
  );
}
const verdicts: string[] = [];
for (const [relay, facilitator] of [['validate', 'verify'], ['broadcast', 'settle']] as const) {
  if (only) break;
  const ratios = of(relay).map((r, i) => r.perSecond / of(facilitator)[i].perSecond);
  table.push(`| ratio ${relay} ÷ ${facilitator}, per round | ${list(ratios, 2)} | **${median(ratios).toFixed(2)}** | ${spread(ratios, 2)} | | | |`);
  verdicts.push(`${relay} ÷ ${facilitator}: median ${median(ratios).toFixed(2)}× (${spread(ratios, 2)}) — ${median(ratios) >= 0.8 ? 'PASS' : 'MISS'} (target ≥ 0.8×)`);
}
console.log([...table, '', ...verdicts, `all ok: ${rows.every((r) => r.ok) ? 'yes' : 'NO'}`].join('\n'));
console.log(`load average at the end: ${loadText()}; ${started.toISOString()} – ${new Date().toISOString()}`);

// --- one side of a round: its own fresh server, its payers funded, its calls prepared and warmed up

async function side(which: 'relay' | 'facilitator') {
  // buildTestApp: a fresh database (PGlite, or a scratch one on DATABASE_URL's server), data dir and devchain.
  const app = await buildTestApp({ roles: ROLES, log, env: { ...(keys ? { FACILITATOR_RELAYER_COUNT: keys } : {}), ...LIFTED } });
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const close = async () => {
    agent.destroy();
    await app.close();
  };
  try {
    const { ctx } = app;
    const devchain = ctx.chain.devchain!;
    const payers = Array.from({ length: payerCount }, () => privateKeyToAccount(generatePrivateKey()));
    const recipient = privateKeyToAccount(generatePrivateKey()).address;
    const spend = (n: number) => formatUnits(AMOUNT * BigInt(Math.ceil(n / payerCount) + 1), ctx.chain.asset.decimals);
    for (const payer of payers) await devchain.fund(payer.address, spend(validateCount + broadcastCount + 2 * warmup));

    const origin = new URL(which === 'relay' ? app.urls.relay : app.urls.facilitator);
    const json = { 'content-type': 'application/json' };
    const prepare = async (kind: Kind, n: number): Promise<Call[]> => {
      if (kind === 'validate' || kind === 'broadcast') {
        const asset = ctx.chain.asset;
        const relayAsset = { chainId: ctx.chain.chainId, network: asset.network, address: asset.address, symbol: asset.symbol, decimals: asset.decimals, ...asset.eip712 };
        // Each its own externalId: two identical challenges issued to one payer in the same millisecond have one id, so
        // one challenge-bound nonce, and the relay rightly takes that authorization once.
        const built = await Promise.all(
          Array.from({ length: n }, (_, i) => mppxCredential({ account: payers[i % payerCount], amount: AMOUNT.toString(), recipient, asset: relayAsset, externalId: `bench-${randomUUID()}` })),
        );
        return built.map((b) => ({
          path: `/v1/mpp/${kind}`,
          body: Buffer.from(JSON.stringify({ credential: b.serialized, request: b.request })),
          headers: kind === 'broadcast' ? { ...json, 'idempotency-key': `bench-${randomUUID()}` } : json,
          good: (status, answer) => status === 200 && (kind === 'validate' ? answer.accepted === true : answer.success === true && answer.receipt?.status === 'success'),
        }));
      }
      const requirements = ctx.x402.requirements({ url: 'http://bench/resource', description: 'bench', mimeType: 'application/json', amount: AMOUNT.toString(), payTo: recipient });
      const payloads = await Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payerCount], requirements)));
      return payloads.map((paymentPayload) => ({
        path: `/${kind}`,
        body: Buffer.from(JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: requirements })),
        headers: json,
        good: (status, answer) => status === 200 && (kind === 'verify' ? answer.isValid : answer.success) === true,
      }));
    };
    const [cheap, paid]: Kind[] = which === 'relay' ? ['validate', 'broadcast'] : ['verify', 'settle'];
    // Warm-up (JIT, connections, the engine's caches), then everything the timed phases send, built now.
    await timed(agent, origin, cheap, await prepare(cheap, 4 * warmup), true);
    await timed(agent, origin, paid, await prepare(paid, warmup), true);
    const cheapCalls = await prepare(cheap, validateCount);
    const paidCalls = await prepare(paid, broadcastCount);
    return {
      close,
      first: () => timed(agent, origin, cheap, cheapCalls),
      second: async () => {
        const before = await devchain.balanceOf(recipient);
        const row = await timed(agent, origin, paid, paidCalls);
        const moved = (await devchain.balanceOf(recipient)) - before;
        if (moved !== AMOUNT * BigInt(paidCalls.length)) console.log(`  ${paid}: the chain moved ${moved}, expected ${AMOUNT * BigInt(paidCalls.length)}`);
        return { ...row, ok: row.ok && moved === AMOUNT * BigInt(paidCalls.length) };
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Sends every call with `concurrency` in flight (workers share one iterator); the rate is calls / wall time. */
async function timed(agent: Agent, origin: URL, kind: Kind, calls: Call[], quiet = false): Promise<Row> {
  if (!quiet) gc();
  const pending = calls.values();
  const latencies: number[] = [];
  let bad = 0;
  const profiler = !quiet && profileDir ? await startProfiler() : null;
  const cpu = process.cpuUsage();
  const fetchesBefore = fetches;
  const start = performance.now();
  const worker = async () => {
    for (const call of pending) {
      const t = performance.now();
      const { status, answer } = await post(agent, origin, call).catch((error: Error) => ({ status: 0, answer: error.message }));
      latencies.push(performance.now() - t);
      if (call.good(status, answer)) continue;
      bad += 1;
      if (bad <= 3) console.log(`  ${kind} answered ${status}: ${JSON.stringify(answer).slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  if (profiler) await profiler.stop(`${profileDir}/${kind}-${rows.filter((r) => r.kind === kind).length + 1}.cpuprofile`);
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  const row = { kind, perSecond: calls.length / seconds, p50: at(0.5), p99: at(0.99), cpuMs: (used.user + used.system) / 1000 / calls.length, rpcPerOp: (fetches - fetchesBefore) / calls.length, ok: bad === 0 };
  if (!quiet || bad) console.log(`${quiet ? 'warm-up ' : ''}${kind}: ${calls.length - bad}/${calls.length} ok, ${row.perSecond.toFixed(0)}/s (p50 ${row.p50.toFixed(1)} ms, p99 ${row.p99.toFixed(1)} ms, CPU ${row.cpuMs.toFixed(2)} ms/op, RPC ${row.rpcPerOp.toFixed(3)}/op, load ${os.loadavg()[0].toFixed(2)})`);
  return row;
}

/** The in-process V8 profiler (both servers and the load generator share this process), started and stopped around one phase. */
async function startProfiler() {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 }); // µs (V8's default is 1 ms)
  await session.post('Profiler.start');
  // Allocations too (sampled every 32 KiB), by the stack that made them: garbage is a large part of the CPU.
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 32 * 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  return {
    stop: async (file: string) => {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      const { profile: heap } = await session.post('HeapProfiler.stopSampling');
      writeFileSync(file.replace(/\.cpuprofile$/, '.heapprofile'), JSON.stringify(heap));
      session.disconnect();
    },
  };
}

function post(agent: Agent, origin: URL, call: Call): Promise<{ status: number; answer: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: origin.hostname, port: origin.port, path: call.path, method: 'POST', headers: { ...call.headers, 'content-length': call.body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, answer: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(call.body);
  });
}
