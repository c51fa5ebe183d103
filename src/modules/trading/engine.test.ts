// decideTick's protective levels over a feed whose prices the test sets: trailing stops follow the best price
// and close once the price falls back past them; a stop-loss closes whatever the strategy would do.
import { describe, expect, it } from 'vitest';
import { openBook, type Book } from './book.js';
import { decideTick, type TickInput } from './engine.js';
import type { Candle, MarketDataProvider } from './market-data.js';
import type { QuantSignalDefinition } from './quant-signal.js';
import { quantRules } from './rules.js';
import { PAPER_VENUE_DEFAULTS, PaperVenue } from './venue.js';

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
    expect(up.decision.kind).not.toBe('exit');
    const dip = await decideTick(input(up.book), { feed: feedAt(109.5), venue });
    expect(dip.decision.kind).not.toBe('exit'); // 109.5 > 110 × 0.99
    const fall = await decideTick(input(up.book), { feed: feedAt(108.8), venue });
    expect(fall).toMatchObject({ decision: { kind: 'exit', reason: 'trailing_stop', action: 'sell' }, order: { side: 'sell', size: '1.000000', status: 'placing' } });
    expect(fall.decision.level).toBeCloseTo(108.9, 9);
  });

  it('a short trails the lowest price; a stop-loss closes before the strategy is asked', async () => {
    const short = withPosition({ qty: -2, avgPrice: 100, trailingStopPercent: 2, bestPrice: 100 });
    const down = await decideTick(input(short), { feed: feedAt(90), venue });
    expect(down.book.positions['BTC-USD']).toMatchObject({ bestPrice: 90 });
    expect(await decideTick(input(down.book), { feed: feedAt(91.9), venue })).toMatchObject({ decision: { kind: 'exit', reason: 'trailing_stop', action: 'buy' } });
    const stopped = await decideTick(input(withPosition({ qty: 1, avgPrice: 100, stopLoss: 95 })), { feed: feedAt(94), venue });
    expect(stopped).toMatchObject({ decision: { kind: 'exit', reason: 'stop_loss', level: 95, price: 94 }, order: { side: 'sell' } });
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
    expect(outcome.order).toMatchObject({ side: 'buy', size: '50.15', status: 'placing' });
    expect(outcome.placing).toMatchObject({ size: '50.15', referencePrice: 99.7 });
  });

  it('places nothing under the minimum notional, and says so; a close of the whole position always goes', async () => {
    const strict = venueWith({ lotSize: '0.001', tickSize: '0.01', minNotionalUsd: '10000' });
    const entry = await decideTick(rulesInput(openBook(10_000)), { feed: feedAt(100), venue: strict });
    expect(entry).toMatchObject({ status: 'completed', order: null, placing: null, decision: { action: 'hold', belowMinimum: { symbol: 'BTC-USD', size: '50', minNotionalUsd: '10000' } } });
    const close = await decideTick({ ...input(withPosition({ qty: '0.5', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue: strict });
    expect(close.order).toMatchObject({ side: 'sell', size: '0.500', status: 'placing' });
  });

  it('closes whole lots of a position the venue left off its grid, and nothing at all of one under a lot', async () => {
    const venue = venueWith({ lotSize: '0.01', tickSize: '0.01', minNotionalUsd: '1' });
    const close = await decideTick({ ...input(withPosition({ qty: '1.2345', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue });
    expect(close.order).toMatchObject({ size: '1.23' });
    const dust = await decideTick({ ...input(withPosition({ qty: '0.004', avgPrice: '100' })), flatten: true }, { feed: feedAt(100), venue });
    expect(dust).toMatchObject({ order: null, decision: { kind: 'flatten', action: 'hold' } });
    expect(dust.book.positions['BTC-USD']).toEqual({ qty: '0.004', avgPrice: '100' }); // still held, at its value
  });

  it('decides as if flat over a position under one lot, and drops its levels: a crossed stop cannot hold every tick', async () => {
    const venue = venueWith({ lotSize: '0.01', tickSize: '0.01', minNotionalUsd: '1' });
    const stopped = withPosition({ qty: '0.004', avgPrice: '100', stopLoss: 99 });
    const outcome = await decideTick(rulesInput(stopped), { feed: feedAt(90), venue });
    // Not an exit that cannot fill: the rules enter long from flat, and the dust keeps no stop.
    expect(outcome.decision).toMatchObject({ kind: 'quant_signal', action: 'buy' });
    expect(outcome.order).toMatchObject({ side: 'buy', status: 'placing' });
    expect(outcome.book.positions['BTC-USD']).toEqual({ qty: '0.004', avgPrice: '100' });
  });
});
