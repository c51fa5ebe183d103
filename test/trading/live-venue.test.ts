// A live venue (orders with effects outside the book): each order is claimed in the database before it
// is placed, so however ticks race, are retried or lose the venue's answer, every order the venue holds
// is one execution's, recorded once in the book.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql } from 'drizzle-orm';
import type { Fill } from '../../src/modules/trading/engine/book.js';
import { RuntimeStore } from '../../src/modules/trading/runtimes/runtime-store.js';
import { PLACEMENT_LEASE_MS } from '../../src/modules/trading/engine/placement.js';
import { systemClock } from '../../src/platform/clock.js';
import { newId } from '../../src/platform/ids.js';
import { EmbeddedFeed } from '../../src/modules/trading/data/market-data.js';
import { OrderRejected, OrderUnfilled, PaperVenue, type OrderRequest, type Venue, type VenuePrices } from '../../src/modules/trading/venues/venue.js';
import { launch, openTradingHarness, type TradingHarness } from './harness.js';

/**
 * A stand-in for a real venue's order book, filled like the paper venue. As at real venues, a client
 * order id is unique only among open orders: a market order fills at once, so the same id placed again
 * is a second order (`placed` counts them per id). `loseNextAnswer` places the order and then fails the
 * call, as a connection cut after the venue took it would; `rejectNext` refuses the next order; `down`
 * answers no order call (its quote included). Its own prices, which its runtimes decide on, are the
 * embedded feed's at the test's clock, quoted 5 bps either side of the last it published.
 */
class LiveVenue implements Venue {
  readonly name = 'live-test';
  readonly live = true;
  readonly orders = new Map<string, Fill>();
  readonly placed = new Map<string, number>();
  calls = 0;
  lookups = 0;
  loseNextAnswer = false;
  rejectNext: string | null = null;
  /** The next order comes back unfilled, as an immediate-or-cancel limit order that found no price. */
  unfillNext = false;
  down = false;
  private readonly paper = new PaperVenue();
  private readonly computed = new EmbeddedFeed();
  private readonly last = new Map<string, number>();
  readonly prices: VenuePrices = {
    supports: (symbol) => this.computed.supports(symbol),
    ticker: async (symbol) => {
      const at = h.clock.now();
      const price = await this.computed.price(symbol, at);
      this.last.set(symbol, price);
      return { price: String(price), at };
    },
    candles: (symbol, interval, at, count) => this.computed.candles(symbol, interval, at, count),
    quote: async (symbol) => {
      if (this.down) throw new Error('connect ECONNREFUSED');
      const price = this.last.get(symbol)!;
      return { bid: String(price * 0.9995), ask: String(price * 1.0005) };
    },
  };

  async place(order: OrderRequest): Promise<Fill> {
    this.calls += 1;
    expect(order.clientOrderId).toBeTruthy();
    await new Promise((resolve) => setTimeout(resolve, 5)); // the venue's round trip: racers overlap here
    if (this.down) throw new Error('connect ECONNREFUSED');
    if (this.rejectNext) {
      const reason = this.rejectNext;
      this.rejectNext = null;
      throw new OrderRejected(reason);
    }
    if (this.unfillNext) {
      this.unfillNext = false;
      throw new OrderUnfilled('expired with nothing filled within its price');
    }
    const fill = await this.paper.place(order);
    this.orders.set(order.clientOrderId!, fill);
    this.placed.set(order.clientOrderId!, (this.placed.get(order.clientOrderId!) ?? 0) + 1);
    if (this.loseNextAnswer) {
      this.loseNextAnswer = false;
      throw new Error('connection reset after the venue took the order');
    }
    return fill;
  }

  async findOrder({ clientOrderId }: { clientOrderId: string }): Promise<Fill | null> {
    this.lookups += 1;
    if (this.down) throw new Error('connect ECONNREFUSED');
    return this.orders.get(clientOrderId) ?? null;
  }
  market(symbol: string) {
    return this.paper.market(symbol);
  }
}

const venue = new LiveVenue();
let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness({ venue });
});
afterAll(async () => h?.close());

// short=true: every first tick of an empty book trades (long or short).
const TRADES_AT_ONCE = 'Trend both ways. fast=2 slow=5 short=true';
// A live venue's runtimes decide on its own prices.
const VENUE = { dataSources: ['venue'] };

async function executionsOf(runtimeId: string) {
  return h.app.ctx.database.query<{ id: string; status: string; order: any; attemptCount: number; error: any }>(
    sql`select id, status, "order", attempt_count as "attemptCount", error from trading_executions where runtime_id = ${runtimeId} order by id`,
  );
}

async function bookOf(runtimeId: string) {
  const [row] = await h.app.ctx.database.query<{ book: any }>(sql`select book from trading_runtimes where id = ${runtimeId}`);
  return typeof row!.book === 'string' ? JSON.parse(row!.book) : row!.book;
}

/** Every order the venue holds is one filled execution, and the runtime's book counts each of its own once. */
async function expectOrdersMatchBook(runtimeId: string) {
  const all = await h.app.ctx.database.query<{ id: string }>(sql`select id from trading_executions where "order"->>'status' = 'filled'`);
  expect(new Set(all.map((e) => e.id))).toEqual(new Set(venue.orders.keys()));
  // Never a second order for one execution, whatever was retried.
  expect([...venue.placed.values()].filter((n) => n > 1)).toEqual([]);
  const executions = await executionsOf(runtimeId);
  const filled = executions.filter((e) => e.order?.status === 'filled');
  expect(executions.filter((e) => e.status === 'placing')).toEqual([]);
  const book = await bookOf(runtimeId);
  expect(book.trades).toBe(filled.length);
  const net = filled.reduce((qty, e) => qty + (e.order.side === 'buy' ? 1 : -1) * Number(e.order.size), 0);
  expect(Object.values(book.positions as Record<string, { qty: number }>).reduce((q, p) => q + Number(p.qty), 0)).toBeCloseTo(net, 6);
  return filled;
}

/** Each test's runtime stops ticking when it is done, so the next test's minutes are its own. */
async function pause(token: string, runtimeId: string) {
  expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  await h.settle();
}

describe('a live venue', () => {
  it('a tick run twenty times at once places one order, with the execution id as its client order id', async () => {
    const { token, runtimeId } = await launch(h, 'live-racer', TRADES_AT_ONCE, {}, VENUE);
    const at = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000);
    h.clock.set(at);
    const before = venue.orders.size;
    const results = await Promise.all(Array.from({ length: 20 }, () => h.app.ctx.services.trading.runner.run(runtimeId, 'schedule', at, 1)));
    expect(results.filter((r) => r.ran)).toHaveLength(1);
    expect(venue.orders.size - before).toBe(1);
    const [execution] = await expectOrdersMatchBook(runtimeId);
    expect(execution).toMatchObject({ status: 'completed', order: { status: 'filled', venue: 'live-test' } });
    await pause(token, runtimeId);
  });

  it('manual runs racing a scheduled tick of one runtime: each order at the venue is one execution, in the book once', async () => {
    const { token, runtimeId } = await launch(h, 'live-mixed', TRADES_AT_ONCE, {}, VENUE);
    const at = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000);
    const runner = h.app.ctx.services.trading.runner;
    const runs = [runner.run(runtimeId, 'schedule', at, 1)];
    for (let i = 1; i <= 6; i++) runs.push(runner.run(runtimeId, 'manual', new Date(at.getTime() + i * 1_000), 1));
    h.clock.set(new Date(at.getTime() + 10_000));
    const settled = await Promise.allSettled(runs);
    expect(settled.filter((r) => r.status === 'fulfilled' && r.value.ran).length).toBeGreaterThan(0);
    const filled = await expectOrdersMatchBook(runtimeId);
    expect(filled.length).toBeGreaterThan(0);
    await pause(token, runtimeId);
  });

  it('an order whose answer was lost stays placing, and its retry fills it once without a second order', async () => {
    const { token, runtimeId } = await launch(h, 'live-lost', TRADES_AT_ONCE, {}, VENUE);
    venue.loseNextAnswer = true;
    const ordersBefore = venue.orders.size;
    const at = await h.nextMinute();
    let [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'placing', order: { status: 'placing' }, error: { message: 'connection reset after the venue took the order' } });
    expect(venue.orders.has(execution!.id)).toBe(true);
    const shown = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data[0];
    expect(shown).toMatchObject({ id: execution!.id, status: 'placing', scheduledAt: at });
    // While the order is out, nothing else of the runtime runs. Its placement stays with the caller that lost
    // the answer until the lease lapses (a late arrival at the venue would show by then): 409 order_placing.
    h.clock.advance(1_000);
    expect(await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).toMatchObject({ status: 409, body: { data: { reason: 'order_placing' } } });
    // Past it, a manual run records the fill first (the venue asked for the order by its client id, not sent
    // it again), then runs.
    const [callsBefore, lookupsBefore] = [venue.calls, venue.lookups];
    h.clock.advance(PLACEMENT_LEASE_MS);
    const manual = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {});
    expect(manual.status).toBe(201);
    expect(venue.lookups - lookupsBefore).toBeGreaterThanOrEqual(1);
    expect(venue.placed.get(execution!.id)).toBe(1);
    expect(venue.calls - callsBefore).toBeLessThanOrEqual(1); // the manual run's own order, if its signal trades
    [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'completed', error: null, order: { status: 'filled' } });
    // The tick's own event, delivered again, finds its execution done and places nothing.
    const ordersAfterManual = venue.orders.size;
    h.clock.advance(6_000);
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    expect(venue.orders.size).toBe(ordersAfterManual);
    expect(venue.orders.size - ordersBefore).toBe((await expectOrdersMatchBook(runtimeId)).length);
    await pause(token, runtimeId);
  });

  it('a lost answer retried by its own event fills the order once', async () => {
    const { runtimeId } = await launch(h, 'live-retry', TRADES_AT_ONCE, {}, VENUE);
    venue.loseNextAnswer = true;
    const ordersBefore = venue.orders.size;
    await h.nextMinute();
    expect((await executionsOf(runtimeId))[0]).toMatchObject({ status: 'placing', attemptCount: 1 });
    h.clock.advance(PLACEMENT_LEASE_MS + 1_000);
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    const [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'completed', attemptCount: 2, order: { status: 'filled' } });
    expect(venue.orders.size - ordersBefore).toBe(1);
    await expectOrdersMatchBook(runtimeId);
  });

  it('a rejected order: the execution says so, nothing is filled, the runtime goes to review, and a manual run answers 409, never 500', async () => {
    const { token, runtimeId } = await launch(h, 'live-rejected', TRADES_AT_ONCE, {}, VENUE);
    const bookBefore = await bookOf(runtimeId);
    venue.rejectNext = 'insufficient balance for this order';
    await h.nextMinute();
    const [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'rejected', order: { status: 'rejected', venue: 'live-test' }, error: { code: 'order_rejected', message: 'insufficient balance for this order' } });
    expect(venue.orders.has(execution!.id)).toBe(false);
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime).toMatchObject({ status: 'needs_review', statusReason: expect.stringContaining('insufficient balance') });
    expect((await bookOf(runtimeId)).positions).toEqual(bookBefore.positions);
    const manual = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {});
    expect(manual).toMatchObject({ status: 409, body: { data: { reason: 'runtime_not_active' } } });
    // The schedule is paused with it: later minutes run nothing.
    await h.settle();
    const count = await h.executionCount(runtimeId);
    await h.nextMinute();
    expect(await h.executionCount(runtimeId)).toBe(count);
  });

  it('an order that comes back unfilled completes its execution with nothing filled, and the runtime runs on', async () => {
    const { token, runtimeId } = await launch(h, 'live-unfilled', TRADES_AT_ONCE, {}, VENUE);
    const bookBefore = await bookOf(runtimeId);
    // A manual run: only this runtime ticks (other tests' runtimes run on the minute).
    venue.unfillNext = true;
    const run = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {});
    expect(run).toMatchObject({ status: 201, body: { data: { status: 'completed', order: { status: 'unfilled', venue: 'live-test', price: null, feeUsd: null }, error: null } } });
    expect(venue.orders.has(run.body.data.id)).toBe(false);
    expect((await bookOf(runtimeId)).positions).toEqual(bookBefore.positions);
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data).toMatchObject({ status: 'active', book: { trades: 0 } });
    // Nothing is left placing: the next run decides again, and its order fills.
    h.clock.advance(1_000);
    const next = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {});
    expect(next).toMatchObject({ status: 201, body: { data: { status: 'completed', order: { status: 'filled' } } } });
  });

  it("a placement lease runs on the database's clock: a node whose clock runs ten minutes ahead cannot take a held one", async () => {
    const { runtimeId } = await launch(h, 'live-lease-clock', TRADES_AT_ONCE, {}, VENUE);
    const id = newId(Date.now());
    const at = new Date().toISOString();
    await h.app.ctx.database.query(sql`insert into trading_executions (id, runtime_id, trigger_type, scheduled_at, status, attempt_count, strategy_version_hash, created_at)
                                       values (${id}, ${runtimeId}, 'manual', ${at}, 'placing', 1, 'sha256:lease', ${at})`);
    const store = new RuntimeStore(h.app.ctx.db, systemClock);
    const held = await store.takePlacement(id, PLACEMENT_LEASE_MS);
    expect(held).toBeInstanceOf(Date);
    // A server's clock is its own: only there can this node's clock be ahead of the database's (the embedded
    // database runs in this process, on its clock).
    if (process.env.DATABASE_URL) {
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        vi.setSystemTime(Date.now() + 10 * 60_000);
        // By its own clock the lease lapsed long ago; by the database's it has a minute left.
        expect(await new RuntimeStore(h.app.ctx.db, systemClock).takePlacement(id, PLACEMENT_LEASE_MS)).toBeNull();
      } finally {
        vi.useRealTimers();
      }
    }
    const renewed = await store.renewPlacement(id, held!, PLACEMENT_LEASE_MS);
    expect(renewed!.getTime()).toBeGreaterThanOrEqual(held!.getTime());
    expect(await store.renewPlacement(id, new Date(held!.getTime() - 1), PLACEMENT_LEASE_MS)).toBeNull(); // not the value it is held by
    // A lease that lapses by the database's clock is taken by the next caller.
    await store.renewPlacement(id, renewed!, 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.takePlacement(id, PLACEMENT_LEASE_MS)).toBeInstanceOf(Date);
    await h.app.ctx.database.query(sql`delete from trading_executions where id = ${id}`);
  });

  it('a manual run while the venue is down answers 503 execution_failed, and the claimed order is placed once when it is back', async () => {
    const { token, runtimeId } = await launch(h, 'live-down', TRADES_AT_ONCE, {}, VENUE);
    venue.down = true;
    h.clock.advance(1_000);
    const manual = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {});
    expect(manual).toMatchObject({ status: 503, body: { data: { reason: 'execution_failed' } } });
    const [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'placing', error: { message: 'connect ECONNREFUSED' } });
    venue.down = false;
    h.clock.advance(PLACEMENT_LEASE_MS + 1_000);
    expect((await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).status).toBe(201);
    expect(venue.placed.get(execution!.id)).toBe(1);
    await expectOrdersMatchBook(runtimeId);
    await pause(token, runtimeId);
  });
});
