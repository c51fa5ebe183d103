// Where the spend policy's time goes in a pay-and-call, timed on the real SpendGuard / PolicyStore code in one process,
// for a wallet with the bench's policy (the same as server.ts) beside a wallet with none, alternated, at several window
// sizes (payments already in the policy wallet's windows): the policy read before the first upstream request
// (hostRule), reserve() for each wallet, and the reservation transaction step by step (BEGIN, SELECT … FOR NO KEY UPDATE
// on the wallet's row, SELECT of wallet_policies, the rules in memory, one window sum per limit, INSERT, COMMIT — a copy
// of SpendGuard.reserve as of commit c5fc1c5: keep reserveTimed in step with it). Also times, as bench-only SQL (src/ is
// unchanged), the cuts: every window in one query, without lower(asset), and only what the check needs; and where one
// sum's per-row time goes (lower(asset), the floor of visiting the rows).
// Run: npx tsx bench/pay-and-call/profile.ts   (BENCH_SAMPLES=300 per step and window size, BENCH_WINDOWS=0,600,5000,
//      BENCH_DATABASE_URL=postgres://…/<empty db> for PostgreSQL)
import fs from 'node:fs';
import os from 'node:os';
import { sql } from 'drizzle-orm';
import { randomBytes, randomUUID } from 'node:crypto';
import { hostOf, needsApproval, paymentRefusal, sameAsset } from '../../src/modules/wallets/policy.js';
import { POLICY_WINDOWS, type Policy } from '../../src/modules/wallets/policy-schemas.js';
import { PolicyStore } from '../../src/modules/wallets/policy-store.js';
import { SpendGuard } from '../../src/modules/wallets/spend-guard.js';
import type { PaymentRow } from '../../src/modules/wallets/store.js';
import { machine } from '../lib.js';
import { startBenchServer } from '../bench-server.js';

const samples = Number(process.env.BENCH_SAMPLES ?? 300);
const windowSizes = (process.env.BENCH_WINDOWS ?? '0,600,5000').split(',').map(Number);

const server = await startBenchServer('pay-profile', { roles: ['api'] });
const { ctx } = server;
const db = ctx.db;
const network = 'eip155:31337';
const asset = '0x' + 'ab'.repeat(20);
const payTo = '0x' + 'cd'.repeat(20);
const url = 'http://127.0.0.1:1/x402-test/ping';
try {
  const mgmt = await ctx.mgmtCredentials.create('bench');
  const api = server.urls.api;
  const call = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${mgmt.secret}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await response.json()) as { data: unknown };
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json.data as { wallet: { id: string } };
  };
  const walletOf = async (externalId: string) => {
    const id = (await call('POST', '/v1/wallets', { externalId, name: externalId })).wallet.id;
    const [cred] = await ctx.database.query<{ id: string }>(sql`select id from wallet_credentials where wallet_id = ${id}`);
    return { id, credentialId: cred.id };
  };
  const plain = await walletOf('plain');
  const guarded = await walletOf('policy');
  const usdg = (amount: string) => ({ network, asset, amount });
  // The same policy as server.ts.
  await call('PUT', `/v1/wallets/${guarded.id}/policy`, {
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
  });

  const guard = new SpendGuard(db, ctx.clock);
  const row = (w: { id: string; credentialId: string }): PaymentRow => {
    const now = ctx.clock.now();
    return {
      id: randomUUID(), walletId: w.id, credentialId: w.credentialId, status: 'pending', x402Version: 2, scheme: 'exact', network, asset, amount: '100', payTo,
      nonce: `0x${randomBytes(32).toString('hex')}`, validBefore: String(Math.floor(now.getTime() / 1000) + 60), method: 'GET', resource: 'GET http://127.0.0.1:1/x402-test/ping',
      upstreamStatus: null, transaction: null, settlement: null, error: null, requestId: null, createdAt: now, updatedAt: now,
    };
  };
  const settle = (id: string) => db.execute(sql`update wallet_payments set status = 'settled' where id = ${id}`);
  /** Settled payments of the wallet spread over the last 50 minutes (inside every window). */
  const fill = async (w: { id: string; credentialId: string }, count: number) => {
    if (count <= 0) return;
    await db.execute(sql`
      insert into wallet_payments (id, wallet_id, credential_id, status, x402_version, scheme, network, asset, amount, pay_to, nonce, valid_before, method, resource, created_at, updated_at)
      select gen_random_uuid(), ${w.id}, ${w.credentialId}, 'settled', 2, 'exact', ${network}, ${asset}, 100, ${payTo}, md5(random()::text || g::text), 0, 'GET', 'GET x', now() - (g * interval '1 millisecond' * 3000000 / ${count}), now()
      from generate_series(1, ${count}) g`);
  };

  type Steps = Record<string, number[]>;
  const add = (steps: Steps, name: string, ms: number) => (steps[name] ??= []).push(ms);
  /** reserve() for the policy wallet, each await timed (same statements, same order as SpendGuard.reserve). */
  const reserveTimed = async (steps: Steps, payment: PaymentRow) => {
    const t0 = performance.now();
    let tIn = 0;
    let tOut = 0;
    await db.transaction(async (tx) => {
      tIn = performance.now();
      const policies = new PolicyStore(tx, ctx.clock);
      let t = performance.now();
      await policies.lockWallet(payment.walletId);
      add(steps, 'SELECT … FOR NO KEY UPDATE wallets (the lock)', performance.now() - t);
      t = performance.now();
      const locked = await policies.policy(payment.walletId);
      add(steps, 'SELECT wallet_policies (the policy)', performance.now() - t);
      if (locked) {
        t = performance.now();
        const policy = locked.policy as Policy;
        const asked = { host: hostOf(url), payTo: payment.payTo, network: payment.network, asset: payment.asset, amount: BigInt(payment.amount) };
        if (paymentRefusal(policy, asked)) throw new Error('refused');
        add(steps, 'rules in memory (hosts, payTo, maxPerCall)', performance.now() - t);
        const limits = (policy.limits ?? []).filter((limit) => sameAsset(limit, asked));
        t = performance.now();
        const usages = await policies.usage(payment.walletId, asked.network, asked.asset, limits.map((limit) => POLICY_WINDOWS[limit.window]));
        add(steps, `window sums (${limits.map((l) => l.window).join(', ')}, one query)`, performance.now() - t);
        limits.forEach((limit, i) => {
          if (usages[i]!.spent + usages[i]!.reserved + asked.amount > BigInt(limit.amount)) throw new Error('over limit');
        });
        if (needsApproval(policy, asked)) throw new Error('approval');
      }
      t = performance.now();
      await policies.insertReserved(payment);
      add(steps, 'INSERT wallet_payments', performance.now() - t);
      tOut = performance.now();
    });
    const end = performance.now();
    add(steps, 'BEGIN (pool + begin)', tIn - t0);
    add(steps, 'COMMIT', end - tOut);
    add(steps, 'reservation transaction, total', end - t0);
  };
  /** The alternative: every window of the policy summed in one pass over the largest window. */
  const oneQuery = async (walletId: string, assetMatch = sql`lower(asset) = ${asset}`) =>
    db.execute(sql`
      select
        coalesce(sum(amount) filter (where created_at > now() - interval '1 hour'), 0)::text as h1,
        coalesce(sum(amount) filter (where created_at > now() - interval '24 hours'), 0)::text as h24,
        coalesce(sum(amount), 0)::text as d30,
        min(created_at) as oldest
      from wallet_payments
      where wallet_id = ${walletId} and created_at > now() - interval '30 days'
        and network = ${network} and ${assetMatch} and status <> 'failed' and method <> 'TRANSFER'`);

  /** What the check needs and no more: per window, open + settled together (the budget view keeps the split and the oldest). */
  const checkOnly = async (walletId: string) =>
    db.execute(sql`
      select
        coalesce(sum(amount) filter (where created_at > now() - interval '1 hour'), 0)::text as h1,
        coalesce(sum(amount) filter (where created_at > now() - interval '24 hours'), 0)::text as h24,
        coalesce(sum(amount), 0)::text as d30
      from wallet_payments
      where wallet_id = ${walletId} and created_at > now() - interval '30 days'
        and network = ${network} and asset = ${asset} and status <> 'failed' and method <> 'TRANSFER'`);

  const out: string[] = [
    `machine: ${machine()}; database ${ctx.database.kind}; ${samples} samples per step and window size, wallets alternated`,
  ];
  let filled = 0;
  const inWindow = async () => (await ctx.database.query<{ n: string }>(sql`select count(*)::text as n from wallet_payments where wallet_id = ${guarded.id} and created_at > now() - interval '1 hour'`))[0].n;
  for (const size of windowSizes) {
    await fill(guarded, size - filled);
    filled = Math.max(filled, size);
    const load = os.loadavg()[0];
    const before = await inWindow();
    const steps: Steps = {};
    const time = async (name: string, fn: () => Promise<unknown>) => {
      const t = performance.now();
      await fn();
      add(steps, name, performance.now() - t);
    };
    for (let i = 0; i < 30; i += 1) {
      // warm-up
      const p = row(plain);
      await guard.reserve({ row: p, url, paidUrl: url });
      const q = row(guarded);
      await guard.reserve({ row: q, url, paidUrl: url });
      await settle(p.id);
      await settle(q.id);
    }
    for (let i = 0; i < samples; i += 1) {
      const order = i % 2 === 0 ? [plain, guarded] : [guarded, plain];
      for (const w of order) {
        const tag = w === plain ? 'no policy' : 'policy';
        await time(`hostRule (policy read), ${tag}`, async () => (await guard.hostRule(w.id))(new URL(url)));
        const p = row(w);
        await time(`reserve(), ${tag}`, () => guard.reserve({ row: p, url, paidUrl: url }));
        await settle(p.id);
      }
      const q = row(guarded);
      await reserveTimed(steps, q);
      await settle(q.id);
      await time('alternative: one query for all three windows', () => oneQuery(guarded.id));
      await time('alternative: one query for all three windows, asset compared without lower()', () => oneQuery(guarded.id, sql`asset = ${asset}`));
      await time('alternative: check only — one query, total per window (no spent/reserved split, no min), no lower()', () => checkOnly(guarded.id));
    }
    out.push('', `### policy wallet's windows holding ${before} → ${await inWindow()} payments during this step, load avg (1 min) ${load.toFixed(1)}→${os.loadavg()[0].toFixed(1)}`, '', '| step | median ms | p90 ms |', '|---|---|---|');
    for (const [name, values] of Object.entries(steps)) out.push(`| ${name} | ${median(values).toFixed(3)} | ${quantile(values, 0.9).toFixed(3)} |`);
    const added = median(steps['reserve(), policy']) - median(steps['reserve(), no policy']) + median(steps['hostRule (policy read), policy']) - median(steps['hostRule (policy read), no policy']);
    out.push('', `policy − no policy (reserve + policy read, medians): ${added.toFixed(3)} ms`);
    console.error(`window ${size} done`);
  }

  // The plan of one window sum (the 30d one) at the largest size, as PolicyStore.usage writes it.
  const usageSql = (windowSeconds: number) => sql`
    select coalesce(sum(amount) filter (where status = 'settled'), 0)::text, coalesce(sum(amount) filter (where status <> 'settled'), 0)::text, min(created_at)
    from wallet_payments
    where wallet_id = ${guarded.id} and created_at > now() - make_interval(secs => ${windowSeconds}) and network = ${network} and lower(asset) = ${asset} and status <> 'failed' and method <> 'TRANSFER'`;
  const explain = async () => (await ctx.database.query<Record<string, string>>(sql`explain (analyze, buffers) ${usageSql(POLICY_WINDOWS['30d'])}`)).map((r) => `    ${Object.values(r)[0]}`);
  out.push('', 'plan of one window sum (30d), as PolicyStore.usage queries it:', ...(await explain()));

  // Where the per-row time goes: the 30d sum as written, without lower() on the asset (an asset stored normalized
  // could be compared as is), and the floor (count the rows only).
  const variants: Steps = {};
  const variantSql: Record<string, () => ReturnType<typeof sql>> = {
    'window sum 30d as PolicyStore.usage writes it': () => usageSql(POLICY_WINDOWS['30d']),
    'same without lower(asset)': () => sql`
      select coalesce(sum(amount) filter (where status = 'settled'), 0)::text, coalesce(sum(amount) filter (where status <> 'settled'), 0)::text, min(created_at)
      from wallet_payments
      where wallet_id = ${guarded.id} and created_at > now() - make_interval(secs => ${POLICY_WINDOWS['30d']}) and network = ${network} and asset = ${asset} and status <> 'failed' and method <> 'TRANSFER'`,
    'count(*) of the window only (the floor of a scan)': () => sql`select count(*) from wallet_payments where wallet_id = ${guarded.id} and created_at > now() - make_interval(secs => ${POLICY_WINDOWS['30d']})`,
  };
  for (let i = 0; i < samples; i += 1) {
    for (const [name, make] of Object.entries(variantSql)) {
      const t = performance.now();
      await db.execute(make());
      add(variants, name, performance.now() - t);
    }
  }
  out.push('', `### per-row cost, window of ${await inWindow()} payments, load avg ${os.loadavg()[0].toFixed(1)}`, '', '| query | median ms | p90 ms |', '|---|---|---|');
  for (const [name, values] of Object.entries(variants)) out.push(`| ${name} | ${median(values).toFixed(3)} | ${quantile(values, 0.9).toFixed(3)} |`);

  console.log(out.join('\n'));
} finally {
  const dataDir = ctx.config.dataDir;
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(0);

function median(values: number[]): number {
  return quantile(values, 0.5);
}
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const low = Math.floor(pos);
  return sorted[low] + (sorted[Math.min(low + 1, sorted.length - 1)] - sorted[low]) * (pos - low);
}
