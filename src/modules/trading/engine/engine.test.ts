// decideTick's protective levels over a feed whose prices the test sets: trailing stops follow the best price
// and close once the price falls back past them; a stop-loss closes whatever the strategy would do.
import { describe, expect, it } from 'vitest';
import { openBook, type Book } from './book.js';
import { decideTick, type TickInput } from './engine.js';
import type { Candle, MarketDataProvider } from '../data/market-data.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import { quantRules } from '../strategies/rules.js';
import { PAPER_VENUE_DEFAULTS, PaperVenue } from '../venues/venue.js';

function feedAt(price: number): MarketDataProvider {
  return {
    name: 'set',
    supports: async () => true,
    price: async () => price,
    candles: async (_symbol, interval, at, count) =>
      Array.from({ length: count }, (_, i): Candle => ({ start: new Date(at.getTime() - (count - i) * interval * 60_000).toISOString(), open: price, high: price, low: price, close: price })),
  };
}

const withPosition = (position: Book['positions'][string]): Book => ({ ...openBook(10_000), cashUsd: String(10_000 - 100 * Number(position.qty)), positions: { 'BTC-USD': position } });
const input = (book: Book): TickInput => ({
  version: { id: 'v', contentHash: 'sha256:v', kind: 'quant_signal', definition: { instructions: 'fast=2 slow=5', universe: ['BTC-USD'], dataSources: ['set'], candleInterval: '1m' } },
  limits: { fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 50 },
  book,
  killSwitch: 'off',
  at: new Date('2026-06-01T00:10:00Z'),
});
const venue = new PaperVenue();

describe('protective levels', () => {
  it('a trailing stop follows the best price up, then closes the long once the price falls 1 % from it', async () => {
    const book = withPosition({ qty: 1, avgPrice: 100, trailingStopPercent: 1, bestPrice: 100 });
    const up = await decideTick(input(book), { feed: feedAt(110), venue });
    expect(up.book.positions['BTC-USD']).toMatchObject({ bestPrice: 110 });
    expect(up.legs[0]!.decision.kind).not.toBe('exit');
    const dip = await decideTick(input(up.book), { feed: feedAt(109.5), venue });
    expect(dip.legs[0]!.decision.kind).not.toBe('exit'); // 109.5 > 110 × 0.99
    const fall = await decideTick(input(up.book), { feed: feedAt(108.8), venue });
    expect(fall.legs).toMatchObject([{ decision: { kind: 'exit', reason: 'trailing_stop', action: 'sell' }, order: { side: 'sell', size: '1.000000', status: 'placing' } }]);
    expect(fall.legs[0]!.decision.level).toBeCloseTo(108.9, 9);
  });

  it('a short trails the lowest price; a stop-loss closes before the strategy is asked', async () => {
    const short = withPosition({ qty: -2, avgPrice: 100, trailingStopPercent: 2, bestPrice: 100 });
    const down = await decideTick(input(short), { feed: feedAt(90), venue });
    expect(down.book.positions['BTC-USD']).toMatchObject({ bestPrice: 90 });
    expect((await decideTick(input(down.book), { feed: feedAt(91.9), venue })).legs).toMatchObject([{ decision: { kind: 'exit', reason: 'trailing_stop', action: 'buy' } }]);
    const stopped = await decideTick(input(withPosition({ qty: 1, avgPrice: 100, stopLoss: 95 })), { feed: feedAt(94), venue });
    expect(stopped.legs).toMatchObject([{ decision: { kind: 'exit', reason: 'stop_loss', level: 95, price: 94 }, order: { side: 'sell' } }]);
  });
});

describe("the venue's rules for the order's symbol", () => {
  // Always long from flat, half the equity: the order is whatever the venue's rules make of 5,000 USD at 100.
  const rulesInput = (book: Book): TickInput => {
    const base = input(book);
    const rules = quantRules.parse({ indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] }, sizing: { exposure: 0.5 } });
    return { ...base, version: { ...base.version, definition: { ...base.version.definition, instructions: '', rules } as QuantSignalDefinition } };
  };
  const venueWith = (rules: { lotSize: string; tickSize: string; minNotionalUsd: string }) => new PaperVenue({ ...PAPER_VENUE_DEFAULTS, markets: { 'BTC-USD': rules } });

  it('sizes the order in whole lots, rounded down, written with the lot decimals', async () => {
    const outcome = await decideTick(rulesInput(openBook(10_000)), { feed: feedAt(99.7), venue: venueWith({ lotSize: '0.01', tickSize: '0.01', minNotionalUsd: '5' }) });
    // 5,000 / 99.7 = 50.1504… units → 50.15.
    expect(outcome.legs[0]!.order).toMatchObject({ side: 'buy', size: '50.15', status: 'placing' });
    expect(outcome.legs[0]!.placing).toMatchObject({ size: '50.15', referencePrice: 99.7 });
  });

  it('places nothing under the minimum notional, and says so; a close of the whole position always goes', async () => {
    const strict = venueWith({ lotSize: '0.001', tickSize: '0.01', minNotionalUsd: '10000' });
    const entry = await decideTick(rulesInput(openBook(10_000)), { feed: feedAt(100), venue: strict });
    expect(entry.legs).toMatchObject([{ status: 'completed', order: null, placing: null, decision: { action: 'hold', belowMinimum: { symbol: 'BTC-USD', size: '50', minNotionalUsd: '10000' } } }]);
    const close = await decideTick({ ...input(withPosition({ qty: '0.5', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue: strict });
    expect(close.legs[0]!.order).toMatchObject({ side: 'sell', size: '0.500', status: 'placing' });
  });

  it('closes whole lots of a position the venue left off its grid, and nothing at all of one under a lot', async () => {
    const venue = venueWith({ lotSize: '0.01', tickSize: '0.01', minNotionalUsd: '1' });
    const close = await decideTick({ ...input(withPosition({ qty: '1.2345', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue });
    expect(close.legs[0]!.order).toMatchObject({ size: '1.23' });
    const dust = await decideTick({ ...input(withPosition({ qty: '0.004', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue });
    expect(dust.legs).toMatchObject([{ order: null, decision: { kind: 'flatten', action: 'hold' } }]);
    expect(dust.book.positions['BTC-USD']).toEqual({ qty: '0.004', avgPrice: '100' }); // still held, at its value
  });

  it('decides as if flat over a position under one lot, and drops its levels: a crossed stop cannot hold every tick', async () => {
    const venue = venueWith({ lotSize: '0.01', tickSize: '0.01', minNotionalUsd: '1' });
    const stopped = withPosition({ qty: '0.004', avgPrice: '100', stopLoss: 99 });
    const outcome = await decideTick(rulesInput(stopped), { feed: feedAt(90), venue });
    // Not an exit that cannot fill: the rules enter long from flat, and the dust keeps no stop.
    expect(outcome.legs[0]!.decision).toMatchObject({ kind: 'quant_signal', action: 'buy' });
    expect(outcome.legs[0]!.order).toMatchObject({ side: 'buy', status: 'placing' });
    expect(outcome.book.positions['BTC-USD']).toEqual({ qty: '0.004', avgPrice: '100' });
  });
});

describe('one order per symbol, each sized as much as allowed', () => {
  // Rules that close every long and enter long from flat, over a universe of three at one price (100).
  const everyone = (universe: string[], book: Book, limits: TickInput['limits']): TickInput => {
    const rules = quantRules.parse({ indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] }, exit: { long: [{ left: 'price', op: '>', right: 0 }] } });
    return { ...input(book), limits, version: { id: 'v', contentHash: 'sha256:v', kind: 'quant_signal', definition: { instructions: '', universe, dataSources: ['set'], candleInterval: '1m', rules } as QuantSignalDefinition } };
  };

  it('cuts a target past fundLimitUsd × maxLeverage to it and records the cut, instead of blocking it', async () => {
    // A winning unlevered book: equity 10,892, the limit 10,000 × 1.
    const outcome = await decideTick(everyone(['BTC-USD'], openBook(10_892), { fundLimitUsd: 10_000, maxLeverage: 1, maxDrawdownPercent: 50 }), { feed: feedAt(100), venue });
    expect(outcome.breaches).toEqual([]);
    expect(outcome.legs).toMatchObject([
      {
        status: 'completed',
        decision: { action: 'buy', symbol: 'BTC-USD', capped: { requestedSize: '108.920000', size: '100.000000', limit: 'fund_limit' } },
        order: { side: 'buy', size: '100.000000', status: 'placing' },
        riskAssessment: { outcome: 'approved', breaches: [], exposureAfterUsd: 10_000 },
      },
    ]);
  });

  it('orders every symbol on one tick: closes first, then the universe in order, each within the room the ones before it left', async () => {
    // ZZZ is held (6,000 of exposure) and its exit holds; XXX and YYY enter at 12,000 / 3 = 4,000 each. The room is
    // 5,000 (10,000 × 0.5): closing ZZZ first frees it, XXX takes 4,000, YYY the 1,000 left.
    const book: Book = { ...openBook(6_000), positions: { 'ZZZ-USD': { qty: '60', avgPrice: '100' } } };
    const outcome = await decideTick(everyone(['XXX-USD', 'YYY-USD', 'ZZZ-USD'], book, { fundLimitUsd: 10_000, maxLeverage: 0.5, maxDrawdownPercent: 50 }), { feed: feedAt(100), venue });
    expect(outcome.legs.map((l) => [l.order?.symbol, l.order?.side, l.order?.size, l.status])).toEqual([
      ['ZZZ-USD', 'sell', '60.000000', 'completed'],
      ['XXX-USD', 'buy', '40.000000', 'completed'],
      ['YYY-USD', 'buy', '10.000000', 'completed'],
    ]);
    expect(outcome.legs[1]!.decision.capped).toBeUndefined();
    expect(outcome.legs[2]!.decision).toMatchObject({ symbol: 'YYY-USD', capped: { requestedSize: '40.000000', size: '10.000000', limit: 'fund_limit' } });
    expect(outcome.legs[2]!.riskAssessment).toMatchObject({ exposureUsd: 4_000, exposureAfterUsd: 5_000, outcome: 'approved' });
    // Once the room is taken, a symbol's order is cut to nothing: no order, the cut recorded, nothing blocked.
    const full = await decideTick(everyone(['XXX-USD', 'YYY-USD'], openBook(12_000), { fundLimitUsd: 10_000, maxLeverage: 0.3, maxDrawdownPercent: 50 }), { feed: feedAt(100), venue });
    expect(full.legs).toMatchObject([
      { status: 'completed', order: { symbol: 'XXX-USD', size: '30.000000' }, decision: { capped: { requestedSize: '60.000000', size: '30.000000', limit: 'fund_limit' } } },
      { status: 'completed', order: null, decision: { action: 'hold', symbol: 'YYY-USD', capped: { requestedSize: '60.000000', size: '0', limit: 'fund_limit' } }, riskAssessment: { outcome: 'no_order' } },
    ]);
  });

  it('closes every position whose level was crossed on the same tick, and the strategy still trades the rest', async () => {
    const book: Book = { ...openBook(8_000), positions: { 'AAA-USD': { qty: '10', avgPrice: '110', stopLoss: 105 }, 'BBB-USD': { qty: '10', avgPrice: '110', stopLoss: 101 } } };
    const rules = quantRules.parse({ indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] } });
    const tick = { ...input(book), version: { id: 'v', contentHash: 'sha256:v', kind: 'quant_signal' as const, definition: { instructions: '', universe: ['AAA-USD', 'BBB-USD', 'CCC-USD'], dataSources: ['set'], candleInterval: '1m', rules } as QuantSignalDefinition } };
    const outcome = await decideTick(tick, { feed: feedAt(100), venue });
    expect(outcome.legs.map((l) => [l.decision.kind, l.decision.reason, l.order?.symbol, l.order?.side])).toEqual([
      ['exit', 'stop_loss', 'AAA-USD', 'sell'],
      ['exit', 'stop_loss', 'BBB-USD', 'sell'],
      ['quant_signal', undefined, 'CCC-USD', 'buy'],
    ]);
  });
});

describe("an llm_agent's orders", () => {
  const agentInput = (book: Book, allowShort?: boolean): TickInput => ({
    ...input(book),
    version: { id: 'a', contentHash: 'sha256:a', kind: 'llm_agent', definition: { instructions: 'trade', universe: ['BTC-USD', 'ETH-USD'], dataSources: ['set'], candleInterval: '1m', model: { provider: 'openai', model: 'm' }, lookback: 5, allowShort } },
  });
  const answering = (orders: unknown[]) => ({
    decide: async () => ({ kind: 'llm_agent' as const, model: { provider: 'openai' as const, model: 'm', answeredBy: 'm' }, promptDigest: 'sha256:p', outcome: 'ok' as const, answer: null, decision: { orders: orders as never, rationale: 'r' }, error: null, usage: null, cached: false }),
  });

  it('short only with allowShort: a sell past what is held is cut to a close, and from flat places nothing', async () => {
    const sell = [{ symbol: 'BTC-USD', side: 'sell', size: 5, type: 'market' }];
    const flat = await decideTick(agentInput(openBook(10_000)), { feed: feedAt(100), venue, agent: answering(sell) });
    expect(flat.legs).toMatchObject([{ status: 'completed', order: null, decision: { kind: 'llm_agent', action: 'hold', symbol: 'BTC-USD', capped: { requestedSize: '5.000000', size: '0', limit: 'allow_short' } } }]);
    const long = await decideTick(agentInput(withPosition({ qty: '2', avgPrice: '100' })), { feed: feedAt(100), venue, agent: answering(sell) });
    expect(long.legs).toMatchObject([{ order: { side: 'sell', size: '2.000000', status: 'placing' }, decision: { capped: { requestedSize: '5.000000', size: '2.000000', limit: 'allow_short' } } }]);
    const allowed = await decideTick(agentInput(openBook(10_000), true), { feed: feedAt(100), venue, agent: answering(sell) });
    expect(allowed.legs).toMatchObject([{ order: { side: 'sell', size: '5.000000', status: 'placing' } }]);
    expect(allowed.legs[0]!.decision.capped).toBeUndefined();
  });

  it('an oversized answer is cut to the limits and recorded, one order per symbol it names', async () => {
    // 50,000 USD of BTC asked; the runtime allows 10,000 × 2. ETH gets nothing left.
    const orders = [
      { symbol: 'BTC-USD', side: 'buy', notionalUsd: 50_000, type: 'market' },
      { symbol: 'ETH-USD', side: 'buy', size: 1, type: 'market' },
    ];
    const outcome = await decideTick(agentInput(openBook(10_000)), { feed: feedAt(100), venue, agent: answering(orders) });
    expect(outcome.breaches).toEqual([]);
    expect(outcome.legs).toMatchObject([
      { status: 'completed', order: { symbol: 'BTC-USD', size: '200.000000' }, decision: { action: 'buy', capped: { requestedSize: '500.000000', size: '200.000000', limit: 'fund_limit' } } },
      { status: 'completed', order: null, decision: { action: 'hold', symbol: 'ETH-USD', capped: { requestedSize: '1.000000', size: '0', limit: 'fund_limit' } } },
    ]);
  });
});
