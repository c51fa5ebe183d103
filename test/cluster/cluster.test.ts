// Issue 31: the whole service as a cluster under kill -9 chaos. One devchain, one PostgreSQL database, and
// six `tollgate serve` processes (2 api behind a balancer, 2 facilitators with their own relayer keys,
// 2 workers: topology.ts). A bounded mixed load — pay-and-calls, intent pays, public settles, event
// publish/claim/ack, schedules and trading runtimes ticking every minute, paid uploads — runs while a
// chaos loop kill -9s a random node every 3–6 s and restarts it. Then the chaos stops, every node runs
// through the shortened recovery windows, and the invariants are checked from the database and the chain
// (invariants.ts), each bullet of the issue one check:
// - every transfer backs at most one service;
// - every paid intent settled exactly once, none stuck settling (and nothing else left open);
// - 0 events lost or acked twice;
// - every schedule tick fired once (schedules' events, trading executions);
// - every settled payment indexed with its attestation;
// - every leader loop running on exactly one node.
// Calls that hit a dead node are lost answers, retried as a client would; they are counted, not violations.
// The counts (operations per kind, kills, restarts, lost answers, violations = 0) go to CI's summary line.
// PostgreSQL only: PGlite is one process per data dir, so there is no cluster to run.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportCounts } from '../fuzz/tenants.js';
import { startChaos, type Chaos } from './chaos.js';
import { seededRandom } from '../../src/platform/seeded-random.js';
import { counts, gaveUpLog, ops, sleep } from './client.js';
import { createFixtures, type Fixtures } from './fixtures.js';
import {
  chainPayments,
  eventsExactlyOnce,
  everyPaymentIndexed,
  intentsSettledOnce,
  leadersOnce,
  nothingLeftOpen,
  ticksFiredOnce,
  transfersBackOneService,
  type Check,
} from './invariants.js';
import { newEventsTold, publishes, startConsumers, type Consumers } from './load-events.js';
import { intentPurchases, newTold, pingPurchases, publicSettles, uploads, type LoadContext } from './load-payments.js';
import { Cluster } from './topology.js';

/** The chaos lasts this long at least (and until the load is done, which stops by LOAD_DEADLINE_MS). */
const CHAOS_MS = 80_000;
/** Each kind's operations are spread over this span. */
const SPAN_MS = 65_000;
const LOAD_DEADLINE_MS = 100_000;
/** How long the recovery windows may take once every node runs again. */
const RECOVERY_MS = 60_000;
const SEED = Number(process.env.CLUSTER_SEED ?? Math.floor(Math.random() * 2 ** 31));

// A timeline on stdout, which vitest shows only when a test fails (silent: 'passed-only').
const T0 = Date.now();
const mark = (what: string) => console.log(`[cluster t+${((Date.now() - T0) / 1000).toFixed(1)}s] ${what}`);

let cluster: Cluster | undefined;
let fx: Fixtures;
let chaos: Chaos | undefined;
let consumers: Consumers | undefined;
const results: Record<string, number> = {};

/** Waits until the recovery windows have done their work: nothing open, every queue drained, the index caught up. */
async function recovered(c: Cluster, f: Fixtures, headBlock: bigint, timeoutMs: number): Promise<void> {
  const db = c.testDb.database;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await nothingLeftOpen(c);
    // Events not acked a few seconds after they were made (a lease whose claim answer was lost with its
    // node comes back after its 10 s; a trading tick's after its 60 s).
    const [{ n: undelivered }] = await db.query<{ n: number }>(sql`
      select count(*)::int as n from events
      where status <> 'acked' and created_at < now() - interval '3 seconds'
        and (queue_id in (${f.queues.published}, ${f.queues.scheduled}, ${f.queues.intents})
             or schedule_id in (select schedule_id from trading_runtimes where id in (${sql.join(f.runtimeIds.map((id) => sql`${id}`), sql`, `)})))`) as [{ n: number }];
    const [checkpoint] = await db.query<{ block: string }>(sql`select block_number::text as block from indexer_checkpoints`);
    const [{ n: unpublished }] = (await db.query<{ n: number }>(sql`select count(*)::int as n from indexed_payments where signature is null`)) as [{ n: number }];
    const indexed = checkpoint !== undefined && BigInt(checkpoint.block) >= headBlock && unpublished === 0;
    if (open.violations.length === 0 && undelivered === 0 && indexed) return;
    if (Date.now() > deadline) {
      mark(`not recovered after ${timeoutMs} ms: ${JSON.stringify({ open: open.violations, undelivered, checkpoint, headBlock: String(headBlock) })}`);
      return;
    }
    await sleep(1_000);
  }
}

describe.skipIf(!process.env.DATABASE_URL)('the service as a cluster under kill -9 chaos (PostgreSQL)', () => {
  beforeAll(async () => {
    cluster = await Cluster.create();
    await cluster.startNodes();
    mark('6 nodes up');
    fx = await createFixtures(cluster);
    mark('fixtures made');
  }, 180_000);

  afterAll(async () => {
    await chaos?.stop().catch(() => undefined);
    await consumers?.stop().catch(() => undefined);
    await cluster?.close();
    reportCounts('cluster', { ...ops, ...counts, ...results });
  }, 60_000);

  it('a mixed load under kill -9 of random nodes keeps every invariant', { timeout: 330_000 }, async () => {
    const c = cluster!;
    mark(`seed ${SEED}`);
    const told = newTold();
    const eventsTold = newEventsTold();
    consumers = startConsumers(fx, eventsTold, 2);
    const started = Date.now();
    chaos = startChaos(c, seededRandom(SEED), mark);
    const ctx: LoadContext = { cluster: c, fx, told, spanMs: SPAN_MS, deadline: started + LOAD_DEADLINE_MS };
    await Promise.all([
      pingPurchases(ctx, 24),
      intentPurchases(ctx, 16),
      publicSettles(ctx, 20),
      uploads(ctx, 8),
      publishes(ctx, eventsTold, 60),
    ]);
    mark(`load done: ${JSON.stringify(ops)}${gaveUpLog.length ? `; given up:\n  ${gaveUpLog.join('\n  ')}` : ''}`);
    if (Date.now() - started < CHAOS_MS) await sleep(CHAOS_MS - (Date.now() - started));
    await chaos.stop();
    mark(`chaos stopped, every node up: ${chaos.log.length} kills (${chaos.log.join(' ')})`);

    await recovered(c, fx, await c.pub.getBlockNumber(), RECOVERY_MS);
    mark('recovered');
    const until = new Date(Date.now() - 10_000);
    await consumers.stop();

    const chain = await chainPayments(c);
    const ticks = await ticksFiredOnce(c, fx, until);
    const checks: Check[] = [
      await transfersBackOneService(c, fx, told, chain),
      await intentsSettledOnce(c, fx, told, chain),
      await nothingLeftOpen(c),
      await eventsExactlyOnce(c, fx, eventsTold, until),
      ticks.check,
      await everyPaymentIndexed(c, chain),
      await leadersOnce(c),
    ];
    Object.assign(results, {
      operations: Object.entries(ops).reduce((sum, [kind, n]) => sum + (kind === 'claim' ? 0 : n), 0),
      payments: chain.payments.length,
      deliveries: eventsTold.deliveries,
      scheduleTicks: ticks.scheduleTicks,
      tradingTicks: ticks.tradingTicks,
      violations: checks.reduce((sum, check) => sum + check.violations.length, 0),
    });
    for (const check of checks) mark(`${check.name}: ${check.checked} checked, ${check.violations.length} violations${check.violations.length ? `\n  ${check.violations.join('\n  ')}` : ''}`);
    mark(`counts: ${JSON.stringify({ ...ops, ...counts, ...results })}`);

    // Enough happened for the checks to mean something: kills, payments, ticks.
    expect(counts.kills).toBeGreaterThanOrEqual(5);
    expect(chain.payments.length).toBeGreaterThan(20);
    expect(ticks.scheduleTicks).toBeGreaterThanOrEqual(fx.scheduleIds.length);
    expect(Object.fromEntries(checks.map((check) => [check.name, check.violations]))).toEqual(Object.fromEntries(checks.map((check) => [check.name, []])));
  });
});
