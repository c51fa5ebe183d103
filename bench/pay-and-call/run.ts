// Two comparisons in one run, on the devchain, every call settling on chain:
//  1. the latency pay-and-call adds over a direct paid call of /x402-test/ping made by the same client with the
//     same signer (the wallet's key). Target: ≤ 10 ms median.
//  2. the latency a spend policy adds to a pay-and-call: the same call from a wallet with a realistic policy
//     (limits 1h/24h/30d, maxPerCall, allowHosts, denyPayTo, approvalAbove; nothing refused) beside a wallet with
//     none. Target: ≤ 2 ms median.
// Every iteration makes the three calls, one after another, in an order that cycles through all six permutations,
// so drift (chain growth, GC, other load on the machine) hits every side alike. Rounds are reported one by one.
// Run: npx tsx bench/pay-and-call/run.ts   (BENCH_ROUNDS=3, BENCH_ITERATIONS=200 per side per round, BENCH_WARMUP=20,
//      BENCH_GAP_MS=0 idle after each timed call, BENCH_DATABASE_URL=postgres://… to use PostgreSQL)
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { privateKeyToAccount } from 'viem/accounts';
import { readPaymentRequired, readSettlement, signPayment } from '../../src/x402/client.js';
import { machine, startProcess, stopProcess } from '../lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const iterations = Number(process.env.BENCH_ITERATIONS ?? 200);
const warmup = Number(process.env.BENCH_WARMUP ?? 20);
// Idle time after each timed call (default 0: back to back). Pay-and-call confirms a payment on chain after answering,
// so back to back that work overlaps the next call, whichever side it is; a gap lets it finish first.
const gapMs = Number(process.env.BENCH_GAP_MS ?? 0);
const TARGET_MS = 10;
const POLICY_TARGET_MS = 2;

interface Ready {
  api: string;
  address: string;
  secret: string;
  privateKey: `0x${string}`;
  policyWallet: { id: string; secret: string; policy: Record<string, unknown> };
  network: string;
  asset: string;
  database: string;
}

type Side = 'direct' | 'plain' | 'policy';
const SIDES: Side[] = ['direct', 'plain', 'policy'];
const ORDERS: Side[][] = [
  ['direct', 'plain', 'policy'],
  ['policy', 'direct', 'plain'],
  ['plain', 'policy', 'direct'],
  ['direct', 'policy', 'plain'],
  ['plain', 'direct', 'policy'],
  ['policy', 'plain', 'direct'],
];
type Samples = Record<Side, number[]>;

const apiPort = await freePort();
const server = await startProcess(process.execPath, ['--import', 'tsx', path.join(here, 'server.ts')], { ...process.env, BENCH_API_PORT: String(apiPort) }, /^BENCH_READY (.+)$/m);
try {
  const ready = JSON.parse(server.match[1]) as Ready;
  const account = privateKeyToAccount(ready.privateKey);
  const ping = `${ready.api}/x402-test/ping`;
  const maxPayment = { network: ready.network, asset: ready.asset, amount: '100' };

  // The client paying by itself: challenge, sign (x402 client, same key as the plain wallet), paid retry.
  const direct = async () => {
    const first = await fetch(ping);
    const challenge = readPaymentRequired((name) => first.headers.get(name), await first.json());
    const { header } = await signPayment(account, challenge, { allow: [{ ...maxPayment, maxAmountPerPayment: maxPayment.amount }] });
    const paid = await fetch(ping, { headers: { 'PAYMENT-SIGNATURE': header } });
    const body = (await paid.json()) as { message?: string };
    if (paid.status !== 200 || body.message !== 'paid pong' || !readSettlement((name) => paid.headers.get(name)).success) {
      throw new Error(`direct paid call failed: ${paid.status} ${JSON.stringify(body)}`);
    }
  };
  // The same payment through a wallet. It answers on the seller's success, `pending` with the seller's transaction in
  // `settlement`, and confirms on chain after the answer: every payment is checked `settled` at the end of the run.
  const answered: Record<string, string[]> = {};
  const viaWallet = (secret: string) => async () => {
    const response = await fetch(`${ready.api}/v1/wallets/me/pay-and-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: ping, maxPayment }),
    });
    const body = (await response.json()) as { data?: { payment?: { id: string; status: string; settlement?: { success?: boolean; transaction?: string } }; upstream?: { body?: { message?: string } } } };
    const payment = body.data?.payment;
    if (response.status !== 200 || !['pending', 'settled'].includes(payment?.status ?? '') || payment?.settlement?.success !== true || !payment.settlement.transaction || body.data?.upstream?.body?.message !== 'paid pong') {
      throw new Error(`pay-and-call failed: ${response.status} ${JSON.stringify(body)}`);
    }
    (answered[secret] ??= []).push(payment.id);
  };
  const calls: Record<Side, () => Promise<void>> = { direct, plain: viaWallet(ready.secret), policy: viaWallet(ready.policyWallet.secret) };

  // The policy is in force on the policy wallet (and only there).
  const policyOf = async (secret: string) => ((await (await fetch(`${ready.api}/v1/wallets/me/policy`, { headers: { authorization: `Bearer ${secret}` } })).json()) as { data: { updatedAt: string | null; limits?: unknown[] } }).data;
  const [plainPolicy, guardedPolicy] = [await policyOf(ready.secret), await policyOf(ready.policyWallet.secret)];
  if (plainPolicy.updatedAt !== null || guardedPolicy.updatedAt === null || guardedPolicy.limits?.length !== 3) {
    throw new Error(`unexpected policies: plain ${JSON.stringify(plainPolicy)}, guarded ${JSON.stringify(guardedPolicy)}`);
  }

  const time = async (fn: () => Promise<void>) => {
    const start = performance.now();
    await fn();
    return performance.now() - start;
  };

  for (let i = 0; i < warmup; i += 1) {
    for (const side of ORDERS[i % ORDERS.length]) await calls[side]();
  }

  const all: Samples = { direct: [], plain: [], policy: [] };
  const perRound: { samples: Samples; load: [number, number] }[] = [];
  let step = 0;
  for (let r = 0; r < rounds; r += 1) {
    const loadBefore = os.loadavg()[0];
    const samples: Samples = { direct: [], plain: [], policy: [] };
    for (let i = 0; i < iterations; i += 1) {
      for (const side of ORDERS[step % ORDERS.length]) {
        samples[side].push(await time(calls[side]));
        if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      }
      step += 1;
    }
    perRound.push({ samples, load: [loadBefore, os.loadavg()[0]] });
    for (const side of SIDES) all[side].push(...samples[side]);
    console.error(`round ${r + 1}/${rounds} done`);
  }

  // Every pay-and-call payment of the run is confirmed on chain (the service does it after answering).
  const confirmedBy = Date.now() + 60_000;
  for (const [secret, ids] of Object.entries(answered)) {
    for (;;) {
      const open = new Set(ids);
      for (let before: string | undefined; open.size > 0; ) {
        const page = ((await (await fetch(`${ready.api}/v1/wallets/me/payments?limit=100${before ? `&before=${before}` : ''}`, { headers: { authorization: `Bearer ${secret}` } })).json()) as { data: { id: string; status: string }[] }).data;
        if (page.length === 0) break;
        for (const p of page) if (p.status === 'settled') open.delete(p.id);
        before = page.at(-1)!.id;
      }
      if (open.size === 0) break;
      if (Date.now() > confirmedBy) throw new Error(`${open.size} pay-and-call payments not settled 60 s after the run`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  console.error(`all ${Object.values(answered).flat().length} pay-and-call payments settled on chain`);

  // What the policy wallet's windows held at the end: the window sums grow with every payment counted.
  const budget = ((await (await fetch(`${ready.api}/v1/wallets/me/budget`, { headers: { authorization: `Bearer ${ready.policyWallet.secret}` } })).json()) as { data: { window: string; spent: string; reserved: string }[] }).data;
  const inWindow = budget.map((b) => `${b.window}: ${(BigInt(b.spent) + BigInt(b.reserved)) / 100n} payments`).join(', ');

  const diff = (s: Samples, a: Side, b: Side) => median(s[a]) - median(s[b]);
  const paired = (s: Samples, a: Side, b: Side) => median(s[a].map((v, i) => v - s[b][i]));
  const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;
  const policyAdded = diff(all, 'policy', 'plain');
  const walletAdded = diff(all, 'plain', 'direct');
  const lines = [
    `machine: ${machine()}; database ${ready.database}; ${rounds} rounds × ${iterations} sequential iterations per side after ${warmup} warm-up iterations; each iteration makes the three calls in a rotating order${gapMs > 0 ? `, ${gapMs} ms idle after each timed call` : ', back to back'}`,
    `policy wallet's windows at the end: ${inWindow}`,
    '',
    '| round | load avg (1 min) start→end | direct median | pay-and-call, no policy, median | pay-and-call, policy, median | policy − no policy (medians) | policy − no policy (paired median) | pay-and-call − direct (medians) |',
    '|---|---|---|---|---|---|---|---|',
    ...perRound.map(({ samples: s, load }, r) =>
      `| ${r + 1} | ${load[0].toFixed(1)}→${load[1].toFixed(1)} | ${median(s.direct).toFixed(2)} | ${median(s.plain).toFixed(2)} | ${median(s.policy).toFixed(2)} | ${diff(s, 'policy', 'plain').toFixed(2)} | ${paired(s, 'policy', 'plain').toFixed(2)} | ${diff(s, 'plain', 'direct').toFixed(2)} |`,
    ),
    '',
    `| path (all ${rounds * iterations} iterations) | median ms | p90 ms | p99 ms | mean ms | round medians |`,
    '|---|---|---|---|---|---|',
    row('direct paid call (client signs)', all.direct, perRound.map((p) => median(p.samples.direct))),
    row('pay-and-call, wallet with no policy', all.plain, perRound.map((p) => median(p.samples.plain))),
    row('pay-and-call, wallet with a policy', all.policy, perRound.map((p) => median(p.samples.policy))),
    '',
    `policy overhead: median(policy) − median(no policy) = ${policyAdded.toFixed(2)} ms (rounds ${spread(perRound.map((p) => diff(p.samples, 'policy', 'plain')))}); median of paired differences = ${paired(all, 'policy', 'plain').toFixed(2)} ms (rounds ${spread(perRound.map((p) => paired(p.samples, 'policy', 'plain')))}) (target ≤ ${POLICY_TARGET_MS} ms) ${policyAdded <= POLICY_TARGET_MS ? 'PASS' : 'MISS'}`,
    `pay-and-call overhead: median(no policy) − median(direct) = ${walletAdded.toFixed(2)} ms (rounds ${spread(perRound.map((p) => diff(p.samples, 'plain', 'direct')))}); median of paired differences = ${paired(all, 'plain', 'direct').toFixed(2)} ms (target ≤ ${TARGET_MS} ms) ${walletAdded <= TARGET_MS ? 'PASS' : 'MISS'}`,
  ];
  console.log(lines.join('\n'));
} finally {
  await stopProcess(server.child);
}

function row(name: string, values: number[], roundMedians: number[]): string {
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
  return `| ${name} | ${median(values).toFixed(2)} | ${quantile(values, 0.9).toFixed(2)} | ${quantile(values, 0.99).toFixed(2)} | ${mean.toFixed(2)} | ${roundMedians.map((m) => m.toFixed(2)).join(' / ')} |`;
}

function median(values: number[]): number {
  return quantile(values, 0.5);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const low = Math.floor(pos);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (pos - low);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
