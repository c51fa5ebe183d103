// A tick of several orders at a live venue (one per symbol, issue 42): each order is its own execution (a leg),
// claimed with the others in one commit and placed after it, leg by leg, under its own execution id as client
// order id. However the tick is raced, loses an answer or is retried, each leg is placed at the venue once, and
// none is skipped: a leg after one whose answer is unknown waits for it.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fill } from '../../src/modules/trading/engine/book.js';
import { EmbeddedFeed } from '../../src/modules/trading/data/market-data.js';
import { PLACEMENT_LEASE_MS } from '../../src/modules/trading/engine/placement.js';
import { PaperVenue, type OrderRequest, type Venue, type VenuePrices } from '../../src/modules/trading/venues/venue.js';
import { launch, openTradingHarness, type TradingHarness } from './harness.js';

/**
 * A venue whose orders have effects outside the book, filled like the paper venue. As at real venues a client
 * order id is unique only among open orders, so the same id placed again is a second order (`placed` counts
 * them per id). `loseAnswerOf` names the order (1: the next) that is placed and then answers nothing, as a
 * connection cut after the venue took it would. Its prices, which its runtimes decide on, are the embedded
 * feed's at the test's clock, quoted 5 bps either side of the last it published.
 */
class LegVenue implements Venue {
  readonly name = 'live-legs';
  readonly live = true;
  readonly orders = new Map<string, Fill>();
  readonly placed = new Map<string, number>();
  calls = 0;
  loseAnswerOf = 0;
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
      const price = this.last.get(symbol)!;
      return { bid: String(price * 0.9995), ask: String(price * 1.0005) };
    },
  };

  async place(order: OrderRequest): Promise<Fill> {
    this.calls += 1;
    await new Promise((resolve) => setTimeout(resolve, 5)); // the venue's round trip: racers overlap here
    const fill = await this.paper.place(order);
    this.orders.set(order.clientOrderId!, fill);
    this.placed.set(order.clientOrderId!, (this.placed.get(order.clientOrderId!) ?? 0) + 1);
    if (this.loseAnswerOf > 0 && --this.loseAnswerOf === 0) throw new Error('connection reset after the venue took the order');
    return fill;
  }

  async findOrder({ clientOrderId }: { clientOrderId: string }): Promise<Fill | null> {
    return this.orders.get(clientOrderId) ?? null;
  }

  market(symbol: string) {
    return this.paper.market(symbol);
  }
}

const venue = new LegVenue();
let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness({ venue });
});
afterAll(async () => h?.close());

// Two symbols, short=true: the first tick of an empty book trades both (long or short each).
const BOTH_AT_ONCE = 'Trend both ways. fast=2 slow=5 short=true';
const TWO = { universe: ['BTC-USD', 'ETH-USD'], dataSources: ['venue'] };

async function legsOf(runtimeId: string) {
  const rows = await h.app.ctx.database.query<{ id: string; scheduledAt: string; leg: number; status: string; order: any; attemptCount: number; error: any }>(
    sql`select id, scheduled_at as "scheduledAt", leg, status, "order", attempt_count as "attemptCount", error from trading_executions where runtime_id = ${runtimeId} order by scheduled_at, leg`,
  );
  return rows.map((row) => ({ ...row, leg: Number(row.leg) }));
}

/** Each filled leg is one order at the venue under its id, placed once; the book holds what they filled, per symbol. */
async function expectLegsMatchVenue(runtimeId: string) {
  const legs = await legsOf(runtimeId);
  expect(legs.filter((e) => e.status === 'placing')).toEqual([]);
  const filled = legs.filter((e) => e.order?.status === 'filled');
  for (const leg of filled) expect(venue.placed.get(leg.id)).toBe(1);
  const [row] = await h.app.ctx.database.query<{ book: any }>(sql`select book from trading_runtimes where id = ${runtimeId}`);
  const book = typeof row!.book === 'string' ? JSON.parse(row!.book) : row!.book;
  expect(book.trades).toBe(filled.length);
  for (const symbol of TWO.universe) {
    const net = filled.filter((e) => e.order.symbol === symbol).reduce((qty, e) => qty + (e.order.side === 'buy' ? 1 : -1) * Number(e.order.size), 0);
    expect(Number(book.positions[symbol]?.qty ?? 0)).toBeCloseTo(net, 6);
  }
  return legs;
}

async function pause(token: string, runtimeId: string) {
  expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  await h.settle();
}

describe('one order per symbol at a live venue', () => {
  it('a tick of two orders run twenty times at once places each once, under its own execution id', async () => {
    const { token, runtimeId } = await launch(h, 'legs-racer', BOTH_AT_ONCE, {}, TWO);
    const at = new Date(Math.floor(h.clock.now().getTime() / 60_000) * 60_000 + 60_000);
    h.clock.set(at);
    const results = await Promise.all(Array.from({ length: 20 }, () => h.app.ctx.services.trading.runner.run(runtimeId, 'schedule', at, 1)));
    const ran = results.filter((r) => r.ran);
    expect(ran).toHaveLength(1);
    const legs = await expectLegsMatchVenue(runtimeId);
    expect(legs.map((e) => [e.leg, e.status, e.order.symbol, e.order.status])).toEqual([
      [0, 'completed', 'BTC-USD', 'filled'],
      [1, 'completed', 'ETH-USD', 'filled'],
    ]);
    expect(ran[0]!.ran && ran[0]!.executions.map((e) => e.id)).toEqual(legs.map((e) => e.id));
    await pause(token, runtimeId);
  });

  it("the second order's answer lost: the first is filled once, and the tick's retry finds the second by its client order id", async () => {
    const { token, runtimeId } = await launch(h, 'legs-second-lost', BOTH_AT_ONCE, {}, TWO);
    venue.loseAnswerOf = 2;
    await h.nextMinute();
    let [first, second] = await legsOf(runtimeId);
    expect(first).toMatchObject({ leg: 0, status: 'completed', order: { status: 'filled' } });
    expect(second).toMatchObject({ leg: 1, status: 'placing', error: { message: 'connection reset after the venue took the order' } });
    expect(venue.placed.get(second!.id)).toBe(1);
    // Past the lease the tick's own event comes again: it asks the venue for the second order and sends nothing.
    const calls = venue.calls;
    h.clock.advance(PLACEMENT_LEASE_MS + 1_000);
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    [first, second] = await expectLegsMatchVenue(runtimeId);
    expect(second).toMatchObject({ status: 'completed', attemptCount: 2, error: null, order: { status: 'filled' } });
    expect(venue.calls).toBe(calls);
    expect([venue.placed.get(first!.id), venue.placed.get(second!.id)]).toEqual([1, 1]);
    await pause(token, runtimeId);
  });

  it("the first order's answer lost: the second is not sent until the first is known, then each is placed once", async () => {
    const { token, runtimeId } = await launch(h, 'legs-first-lost', BOTH_AT_ONCE, {}, TWO);
    venue.loseAnswerOf = 1;
    h.clock.advance(1_000);
    expect(await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).toMatchObject({ status: 503, body: { data: { reason: 'execution_failed' } } });
    const [first, second] = await legsOf(runtimeId);
    expect(first).toMatchObject({ leg: 0, status: 'placing', error: { message: 'connection reset after the venue took the order' } });
    expect(second).toMatchObject({ leg: 1, status: 'placing', error: null });
    expect(venue.placed.has(second!.id)).toBe(false);
    // Within the lease nothing of the runtime runs; past it, a run finishes both legs in order (the first found at
    // the venue, the second placed), then runs its own tick.
    h.clock.advance(1_000);
    expect(await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).toMatchObject({ status: 409, body: { data: { reason: 'order_placing' } } });
    h.clock.advance(PLACEMENT_LEASE_MS);
    expect((await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).status).toBe(201);
    const legs = await expectLegsMatchVenue(runtimeId);
    expect(legs.slice(0, 2).map((e) => [e.id, e.status, venue.placed.get(e.id)])).toEqual([
      [first!.id, 'completed', 1],
      [second!.id, 'completed', 1],
    ]);
    await pause(token, runtimeId);
  });
});
