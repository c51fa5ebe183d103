// Exactly one execution per tick whatever the workers do: two consumers draining the same fired ticks,
// a tick run twenty times at once, and a failing venue whose tick is retried and then succeeds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { TickConsumer } from '../../src/modules/trading/runtimes/consumer.js';
import { TickRunner } from '../../src/modules/trading/engine/ticks.js';
import { EmbeddedFeed } from '../../src/modules/trading/data/market-data.js';
import { PaperVenue, type OrderRequest } from '../../src/modules/trading/venues/venue.js';
import { launch, openTradingHarness, type TradingHarness } from './harness.js';

/** A venue that fails while `down` is set (a real venue's outage). */
class FlakyVenue extends PaperVenue {
  down = false;
  override async place(order: OrderRequest) {
    if (this.down) throw new Error('venue unavailable');
    return super.place(order);
  }
}

const venue = new FlakyVenue();
let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness({ venue });
});
afterAll(async () => h?.close());

/** A second worker: its own runner and consumer over the same database. */
function secondWorker() {
  const { ctx } = h.app;
  const trading = ctx.services.trading;
  const runner = new TickRunner(ctx, trading.catalog.store, { feedFor: () => new EmbeddedFeed(), venue, meter: trading.meter, agents: trading.agents });
  return new TickConsumer(() => ctx.services.events, trading.schedules, runner, (runtime) => trading.reconciler.align(runtime), ctx.log);
}

describe('exactly once', () => {
  it('two workers draining the same ticks run each tick once', async () => {
    const runtimes = [];
    for (let i = 0; i < 12; i++) runtimes.push((await launch(h, `worker-user-${i}`)).runtimeId);
    const other = secondWorker();
    const mine = h.app.ctx.services.trading.consumer;
    for (let tick = 0; tick < 3; tick++) {
      h.clock.set(new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000));
      await h.app.ctx.services.events.scheduler.tick();
      const drain = async (consumer: TickConsumer) => {
        let handled = 0;
        for (let n; (n = await consumer.drain()) > 0; ) handled += n;
        return handled;
      };
      const [a, b] = await Promise.all([drain(mine), drain(other)]);
      expect(a + b).toBe(12);
    }
    for (const runtimeId of runtimes) expect(await h.executionCount(runtimeId)).toBe(3);
  });

  it('a tick run twenty times at once records one execution and moves the book once', async () => {
    const { runtimeId } = await launch(h, 'racer');
    const at = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000);
    h.clock.set(at);
    const runner = h.app.ctx.services.trading.runner;
    const results = await Promise.all(Array.from({ length: 20 }, () => runner.run(runtimeId, 'schedule', at, 1)));
    expect(results.filter((r) => r.ran)).toHaveLength(1);
    expect(await h.executionCount(runtimeId)).toBe(1);
  });

  it('a batch holding several ticks of one runtime, twice over, runs each once, oldest first', async () => {
    const { runtimeId } = await launch(h, 'backlog');
    const base = Math.floor(h.clock.now().getTime() / 60_000) * 60_000;
    const ticks = [3, 1, 2, 1, 3].map((m) => new Date(base + m * 60_000));
    h.clock.set(new Date(base + 4 * 60_000));
    const results = await h.app.ctx.services.trading.runner.runMany('schedule', ticks.map((scheduledAt) => ({ runtimeId, scheduledAt, attempt: 1 })));
    expect(results.map((r) => (r.ran ? 'ran' : r.reason))).toEqual(['ran', 'ran', 'ran', 'done', 'done']);
    const [row] = await h.app.ctx.database.query<{ n: string; versions: string }>(
      sql`select count(*)::text as n, (select book_version::text from trading_runtimes where id = ${runtimeId}) as versions from trading_executions where runtime_id = ${runtimeId}`,
    );
    expect(row).toEqual({ n: '3', versions: '3' });
    // Each tick built on the book the one before it left.
    const ran = results.flatMap((r) => (r.ran ? r.executions : [])).sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime());
    expect(ran.map((e) => e.scheduledAt.toISOString())).toEqual([1, 2, 3].map((m) => new Date(base + m * 60_000).toISOString()));
  });

  it('a tick that fails is recorded failed, retried by its event, and then completes once', async () => {
    const { token, runtimeId } = await launch(h, 'unlucky', 'fast=2 slow=5');
    // Find a tick that places an order, with the venue down.
    venue.down = true;
    let failed: any;
    for (let i = 0; i < 60 && !failed; i++) {
      await h.nextMinute();
      failed = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data.find((e: any) => e.status === 'failed');
    }
    expect(failed).toMatchObject({ status: 'failed', attemptCount: 1, error: { message: 'venue unavailable' }, decision: null });
    venue.down = false;
    // The event comes back after its retry delay; the retry takes the failed row over.
    h.clock.advance(6_000);
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    const retried = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data.find((e: any) => e.id === failed.id);
    expect(retried).toMatchObject({ status: 'completed', attemptCount: 2, error: null, order: { status: 'filled' } });
    const [row] = await h.app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from trading_executions where runtime_id = ${runtimeId} and scheduled_at = ${failed.scheduledAt}`);
    expect(row!.n).toBe('1');
  });
});
