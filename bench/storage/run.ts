// Paid image storage on the devchain, in one run, several rounds (median and spread):
// 1. fulfilled uploads/s for ~100 KB JPEGs (each a distinct image, its own Idempotency-Key) beside the
//    facilitator's bare settle/s (pre-signed EIP-3009 authorizations, `POST /settle` on the facilitator
//    origin), same server config, payers, concurrency and database kind. Target: uploads ≥ 0.8 × settles.
// 2. CID throughput: `cidOf(bytes)` vs plain SHA-256 over the same bytes (the 100 KB images, plus 1 MiB
//    and 4 MiB inputs for context). Target (100 KB): cidOf ≥ 0.5 × SHA-256.
//
// Each side of each round runs on its OWN fresh server, devchain and database (built the same way,
// funded the same way, warmed up the same way): anvil slows as blocks pile up (bench/facilitator/run.ts),
// so the side that ran second on a shared devchain would pay for the first side's blocks. The two sides
// alternate which goes first from round to round, so a drift in machine load does not favour one.
//
// Uploads, per round: phase A (not timed) — the first upload of every image → 402, decoded and signed by
// the official x402 client (`x402HTTPClient`), payers taken in turn; phase B (timed) — the paid uploads
// (multipart body built once per image, PAYMENT-SIGNATURE) over real HTTP (node:http keep-alive, same
// process), BENCH_CONCURRENCY in flight, until every one answered 200 `fulfilled`; the payee's USDG
// balance must have moved N × 5000. Settles: the same number of authorizations, same payers, same
// amount and payTo, `POST /settle` with the same concurrency; balance checked the same way.
//
// Run: npx tsx bench/storage/run.ts
// Env: BENCH_ROUNDS (3), BENCH_UPLOADS (300 per side per round), BENCH_CONCURRENCY (64), BENCH_PAYERS (32),
//      BENCH_WARMUP (32 per server), BENCH_KEYS (relayer keys; default: the shipped default, 1),
//      BENCH_CID_REPS (5), BENCH_ONLY (uploads | settles: one side, for profiling), DATABASE_URL (PostgreSQL server: a fresh database per server, dropped after).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import pino from 'pino';
import { getAddress, type Address } from 'viem';
import { loadConfig } from '../../src/config.js';
import type { Role } from '../../src/platform/server-settings.js';
import { devReceiver } from '../../src/chain/dev-receiver.js';
import { cidOf } from '../../src/modules/storage/cid.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { openTestDatabase, type TestDatabase } from '../../test/helpers/database.js';
import { jpegOf, PRICE, storagePayer } from '../../test/storage/helpers.js';
import { signAuthorization } from '../../test/x402/support.js';
import { machine } from '../lib.js';

const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const uploads = Number(process.env.BENCH_UPLOADS ?? 300);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 64);
const payerCount = Number(process.env.BENCH_PAYERS ?? 32);
const warmup = Number(process.env.BENCH_WARMUP ?? 32);
const keys = process.env.BENCH_KEYS;
const cidReps = Number(process.env.BENCH_CID_REPS ?? 5);
const only = process.env.BENCH_ONLY; // 'uploads' or 'settles': one side only (for profiling; no ratio)
const LIFTED = '1000000000';
const ROLES: Role[] = ['api', 'facilitator', 'assets']; // no worker: its loops would be noise on both sides alike
const log = pino({ level: 'warn' });

interface Row {
  label: string;
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU of this process (server + client) per operation, ms. */
  cpuMs: number;
  ok: boolean;
  retries: number;
  load: number;
}

const started = Date.now();
console.log(
  `machine: ${machine()}; load average ${loadText()}; ${uploads} uploads and ${uploads} settles per round, ${concurrency} in flight, ` +
    `${payerCount} payers, ${keys ?? 'default (1)'} relayer key(s), ${warmup} warm-up each per server, ${rounds} rounds, database ${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'}`,
);
const t0 = performance.now();
// jpegOf(kb) lands near, not at, kb KB: scale its argument so the images average ~100 KB (10^5 bytes).
const probe = await Promise.all(Array.from({ length: 8 }, () => jpegOf(100)));
const scale = 100_000 / (probe.reduce((s, b) => s + b.length, 0) / probe.length);
const images = await Promise.all(Array.from({ length: uploads }, () => jpegOf(100 * scale)));
const warmImages = await Promise.all(Array.from({ length: warmup * rounds }, () => jpegOf(100 * scale)));
const meanKb = images.reduce((s, b) => s + b.length, 0) / images.length / 1000;
console.log(`${images.length} distinct JPEGs, mean ${meanKb.toFixed(1)} KB (min ${Math.min(...images.map((b) => b.length))} B, max ${Math.max(...images.map((b) => b.length))} B) (made in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);

const rows: Row[] = [];
for (let round = 1; round <= rounds; round += 1) {
  console.log(`-- round ${round} (load average ${loadText()})`);
  const sides = [() => uploadSide(round), () => settleSide(round)].filter((_, i) => !only || only === ['uploads', 'settles'][i]);
  for (const side of round % 2 ? sides : sides.reverse()) rows.push(await side());
}

// CID vs SHA-256, interleaved per repetition (which goes first alternates), same bytes for both.
const inputs: Array<{ label: string; buffers: Buffer[] }> = [
  { label: `100 KB JPEGs (${images.length})`, buffers: images },
  { label: '1 MiB (8 random)', buffers: Array.from({ length: 8 }, () => randomBytes(1_048_576)) },
  { label: '4 MiB (4 random)', buffers: Array.from({ length: 4 }, () => randomBytes(4 * 1_048_576)) },
];
const cidRows: Array<{ label: string; sha: number[]; cid: number[] }> = inputs.map((i) => ({ label: i.label, sha: [], cid: [] }));
for (let rep = 0; rep < cidReps + 1; rep += 1) {
  for (const [i, input] of inputs.entries()) {
    const pair = [() => hashRate(input.buffers, async (b) => void createHash('sha256').update(b).digest()), () => hashRate(input.buffers, async (b) => void (await cidOf(b)))];
    const [first, second] = rep % 2 ? pair.reverse() : pair;
    const a = await first();
    const b = await second();
    if (rep === 0) continue; // warm-up repetition
    const [sha, cid] = rep % 2 ? [b, a] : [a, b];
    cidRows[i].sha.push(sha);
    cidRows[i].cid.push(cid);
  }
}

// --- report
const byLabel = (label: string) => rows.filter((r) => r.label === label);
const up = byLabel('uploads');
const st = byLabel('settles');
const ratios = up.map((u, i) => u.perSecond / st[i].perSecond);
const fmt = (xs: number[], digits = 0) => xs.map((x) => x.toFixed(digits)).join(' / ');
const spread = (xs: number[], digits = 0) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
const line = (label: string, rs: Row[]) =>
  `| ${label} | ${fmt(rs.map((r) => r.perSecond))} | **${median(rs.map((r) => r.perSecond)).toFixed(0)}** | ${spread(rs.map((r) => r.perSecond))} | ` +
  `${median(rs.map((r) => r.p50)).toFixed(0)} / ${median(rs.map((r) => r.p99)).toFixed(0)} | ${median(rs.map((r) => r.cpuMs)).toFixed(2)} | ${rs.every((r) => r.ok) ? 'yes' : 'NO'}${rs.some((r) => r.retries) ? ` (${rs.reduce((s, r) => s + r.retries, 0)} retried)` : ''} |`;
console.log(
  [
    '',
    `| side | rounds (per second) | median /s | spread (min–max) | p50 / p99 ms (median) | CPU ms/op, this process (median) | all 200 + chain moved |`,
    '|---|---|---|---|---|---|---|',
    line(`fulfilled uploads (~${meanKb.toFixed(0)} KB JPEGs)`, up),
    line('bare settles, `POST /settle`', st),
    line('context, not in the ratio: first uploads → 402 (image validated, order created)', byLabel('challenges')),
    `| ratio uploads ÷ settles, per round | ${fmt(ratios, 2)} | **${median(ratios).toFixed(2)}** | ${spread(ratios, 2)} | | | |`,
  ].join('\n'),
);
const ratio = median(ratios);
console.log(`\nuploads ÷ settles: median ${ratio.toFixed(2)}× — ${ratio >= 0.8 ? 'PASS' : 'MISS'} (target ≥ 0.8×)`);
console.log(
  [
    '',
    `| input | SHA-256 MB/s (reps) | median | cidOf MB/s (reps) | median | cidOf ÷ SHA-256 (median of per-rep ratios, spread) |`,
    '|---|---|---|---|---|---|',
    ...cidRows.map((r) => {
      const rr = r.cid.map((c, i) => c / r.sha[i]);
      return `| ${r.label} | ${fmt(r.sha)} | **${median(r.sha).toFixed(0)}** | ${fmt(r.cid)} | **${median(r.cid).toFixed(0)}** | **${median(rr).toFixed(2)}** (${spread(rr, 2)}) |`;
    }),
  ].join('\n'),
);
const cidRatio = median(cidRows[0].cid.map((c, i) => c / cidRows[0].sha[i]));
console.log(`\ncidOf ÷ SHA-256 at 100 KB: ${cidRatio.toFixed(2)}× — ${cidRatio >= 0.5 ? 'PASS' : 'MISS'} (target ≥ 0.5×)`);
console.log(`load average at the end: ${loadText()}; ${new Date(started).toISOString()} – ${new Date().toISOString()}`);

// --- the two sides

interface Bench {
  server: RunningServer;
  testDatabase: TestDatabase;
  dataDir: string;
  payTo: Address;
  agent: Agent;
  close(): Promise<void>;
}

/** A fresh server, devchain and database, configured the same for both sides; limits lifted (they still count). */
async function freshServer(): Promise<Bench> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-storage-'));
  const testDatabase = await openTestDatabase();
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    DEVCHAIN_PORT: '0',
    LOG_LEVEL: 'warn',
    ...(keys ? { FACILITATOR_RELAYER_COUNT: keys } : {}),
    FACILITATOR_SETTLE_LIMIT_PER_CLIENT: LIFTED,
    FACILITATOR_VERIFY_LIMIT_PER_CLIENT: LIFTED,
    FACILITATOR_SETTLE_LIMIT_PER_PAYER: LIFTED,
    FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: LIFTED,
  });
  const server = await startServer({ config, roles: ROLES, database: testDatabase.database, ephemeralSecrets: true, adminSocket: false, log });
  // The storage payee (a dev receiver on the devchain): the settle side pays the same address.
  const payTo = getAddress(config.storage.payTo ?? devReceiver(dataDir, 'storage-receiver-key'));
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  return {
    server,
    testDatabase,
    dataDir,
    payTo,
    agent,
    async close() {
      agent.destroy();
      await server.stop();
      await testDatabase.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function fundPayers(bench: Bench) {
  const payers = Array.from({ length: payerCount }, () => storagePayer());
  for (const payer of payers) await bench.server.ctx.chain.devchain!.fund(payer.account.address, '100');
  return payers;
}

async function uploadSide(round: number): Promise<Row> {
  const bench = await freshServer();
  try {
    const payers = await fundPayers(bench);
    const api = new URL(bench.server.urls.api);
    const boundary = `----tollgate-bench-${randomUUID()}`;

    /**
     * Phase A for a set of images: the first uploads (402: the image validated, the order created) with
     * `concurrency` in flight — timed apart, as context: the timed figure below is phase B — then the
     * official client's signature for each challenge (not timed).
     */
    const prepare = async (set: Buffer[]) => {
      const firsts = set.map((bytes) => {
        const body = multipartBody(boundary, bytes);
        return { body, base: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': randomUUID() }, answer: null as Answer | null };
      });
      const challenges = await timed(firsts, async (f) => {
        f.answer = await send(bench.agent, api, 'POST', '/v1/ipfs/upload', f.base, f.body);
        return f.answer.status === 402;
      });
      const prepared: Array<{ body: Buffer; path: string; headers: Record<string, string> }> = [];
      for (const [i, { body, base, answer }] of firsts.entries()) {
        if (answer?.status !== 402) throw new Error(`expected 402, got ${answer?.status}: ${answer?.body.toString().slice(0, 300)}`);
        const payer = payers[i % payers.length];
        const challenge = JSON.parse(answer.body.toString());
        if (getAddress(challenge.accepts[0].payTo) !== bench.payTo) throw new Error('unexpected payTo');
        const required = payer.http.getPaymentRequiredResponse((name) => (answer.headers[name.toLowerCase()] as string | undefined) ?? null, challenge);
        const payload = await payer.http.createPaymentPayload(required);
        const signature = payer.http.encodePaymentSignatureHeader(payload) as Record<string, string>;
        const url = new URL(challenge.resource.url);
        prepared.push({ body, path: `${url.pathname}${url.search}`, headers: { ...base, ...signature } });
      }
      return { prepared, challenges };
    };
    let retries = 0;
    const paidUpload = async (p: { body: Buffer; path: string; headers: Record<string, string> }) => {
      for (let attempt = 0; ; attempt += 1) {
        const res = await send(bench.agent, api, 'POST', p.path, p.headers, p.body);
        if (res.status === 200 && JSON.parse(res.body.toString()).data?.status === 'fulfilled') return true;
        // A paid order is redeemed by repeating the upload; count it, but the bench expects none.
        if (attempt === 0) console.log(`  upload answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
        retries += 1;
        if (attempt >= 5) return false;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };

    const warm = await prepare(warmImages.slice((round - 1) * warmup, round * warmup));
    await timed(warm.prepared, paidUpload);
    retries = 0;
    const { prepared, challenges } = await prepare(images);
    rows.push(report({ label: 'challenges', ...challenges, ok: challenges.ok === images.length, retries: 0 }, `first uploads (402, image validated, order created): ${challenges.ok}/${images.length}`));
    const before = await bench.server.ctx.chain.devchain!.balanceOf(bench.payTo);
    const row = await timed(prepared, paidUpload);
    const moved = (await bench.server.ctx.chain.devchain!.balanceOf(bench.payTo)) - before;
    const ok = row.ok === prepared.length && moved === PRICE * BigInt(prepared.length);
    return report({ label: 'uploads', ...row, ok, retries }, `fulfilled uploads: ${row.ok}/${prepared.length} fulfilled, chain moved ${moved} (expected ${PRICE * BigInt(prepared.length)})${retries ? `, ${retries} retries` : ''}`);
  } finally {
    await bench.close();
  }
}

async function settleSide(round: number): Promise<Row> {
  const bench = await freshServer();
  try {
    const payers = await fundPayers(bench);
    const facilitator = new URL(bench.server.urls.facilitator);
    const requirements: PaymentRequirements = bench.server.ctx.x402.requirements({
      url: `${bench.server.urls.api}/v1/ipfs/upload`,
      description: 'bench',
      mimeType: 'application/json',
      amount: PRICE.toString(),
      payTo: bench.payTo,
    });
    const sign = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => signAuthorization(payers[i % payers.length].account, requirements)));
    const settle = async (payload: PaymentPayload) => {
      const body = Buffer.from(JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }));
      const res = await send(bench.agent, facilitator, 'POST', '/settle', { 'content-type': 'application/json' }, body);
      const ok = res.status === 200 && JSON.parse(res.body.toString()).success === true;
      if (!ok) console.log(`  settle answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
      return ok;
    };
    void round;
    await timed(await sign(warmup), settle);
    const payloads = await sign(uploads);
    const before = await bench.server.ctx.chain.devchain!.balanceOf(bench.payTo);
    const row = await timed(payloads, settle);
    const moved = (await bench.server.ctx.chain.devchain!.balanceOf(bench.payTo)) - before;
    const ok = row.ok === payloads.length && moved === PRICE * BigInt(payloads.length);
    return report({ label: 'settles', ...row, ok, retries: 0 }, `bare settles: ${row.ok}/${payloads.length} settled, chain moved ${moved}`);
  } finally {
    await bench.close();
  }
}

function report(row: Row, what: string): Row {
  console.log(`${what}: ${row.perSecond.toFixed(0)}/s (p50 ${row.p50.toFixed(0)} ms, p99 ${row.p99.toFixed(0)} ms, CPU ${row.cpuMs.toFixed(2)} ms/op, load ${row.load.toFixed(2)})`);
  return row;
}

/** Runs `call` over `items` with `concurrency` in flight; rate = items / wall time. */
async function timed<T>(items: T[], call: (item: T) => Promise<boolean>) {
  const latencies: number[] = [];
  let ok = 0;
  let next = 0;
  const cpu = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++];
        const t = performance.now();
        if (await call(item).catch((error: unknown) => (console.log(`  error: ${String(error)}`), false))) ok += 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu);
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
  return { ok, perSecond: items.length / seconds, p50: pct(0.5), p99: pct(0.99), cpuMs: (used.user + used.system) / 1000 / items.length, load: os.loadavg()[0] };
}

/** MB/s (10^6 bytes) of `fn` over `buffers`, looping over them for at least 250 ms. */
async function hashRate(buffers: Buffer[], fn: (b: Buffer) => Promise<void>): Promise<number> {
  let bytes = 0;
  const start = performance.now();
  while (performance.now() - start < 250) {
    for (const b of buffers) {
      await fn(b);
      bytes += b.length;
    }
  }
  return bytes / 1e6 / ((performance.now() - start) / 1000);
}

/** One part, field `file`, as a browser's FormData would send it; built once per image. */
function multipartBody(boundary: string, bytes: Buffer): Buffer {
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="image.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]);
}

type Answer = Awaited<ReturnType<typeof send>>;

function send(agent: Agent, target: URL, method: string, pathname: string, headers: Record<string, string>, body: Buffer) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
    const req = request({ agent, host: target.hostname, port: target.port, path: pathname, method, headers: { ...headers, 'content-length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function loadText(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}
