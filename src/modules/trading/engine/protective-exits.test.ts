// Issue 42 item 4-5: protective levels are checked against each bar's high and low since the last check (fill at
// the level, or at the open when the market gapped past it), and they pass the kill switch's halt, as the owner's
// flatten does; the strategy's own orders do not.
import { describe, expect, it } from 'vitest';
import { openBook, type Book } from './book.js';
import { decideTick, evaluateTick, type TickInput } from './engine.js';
import type { Candle, MarketDataProvider } from '../data/market-data.js';
import { levelsAgainst } from './protective-exits.js';
import { quantRules } from '../strategies/rules.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import { PaperVenue } from '../venues/venue.js';

const AT = new Date('2026-06-01T00:10:00Z');
const bar = (minute: number, open: number, high: number, low: number, close: number): Candle => ({ start: new Date(AT.getTime() - (10 - minute) * 60_000).toISOString(), open, high, low, close });

/** A feed at `price` now whose 1m candles are `bars` (the last ones closed by AT), flat at `price` before them. */
function feedWith(price: number, bars: Candle[]): MarketDataProvider {
  return {
    name: 'set',
    supports: async () => true,
    price: async () => price,
    candles: async (_symbol, interval, at, count) =>
      Array.from({ length: count }, (_, i): Candle => {
        const start = new Date(at.getTime() - (count - i) * interval * 60_000).toISOString();
        return bars.find((b) => b.start === start) ?? { start, open: price, high: price, low: price, close: price };
      }),
  };
}

// Rules that always want long: without the kill switch the strategy would buy every tick.
const rules = quantRules.parse({ indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] }, sizing: { exposure: 0.5 } });
const input = (book: Book, killSwitch: TickInput['killSwitch'] = 'off'): TickInput => ({
  version: { id: 'v', contentHash: 'sha256:v', kind: 'quant_signal', definition: { instructions: '', universe: ['BTC-USD', 'ETH-USD'], dataSources: ['set'], candleInterval: '1m', rules } as QuantSignalDefinition },
  limits: { fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 50 },
  book,
  killSwitch,
  at: AT,
});
const holding = (position: Book['positions'][string]): Book => ({ ...openBook(10_000), cashUsd: String(10_000 - 100 * Number(position.qty)), positions: { 'BTC-USD': position } });
// Checked last at minute 7: the bars of minutes 7, 8 and 9 are closed since.
const CHECKED = new Date(AT.getTime() - 3 * 60_000).toISOString();

describe('protective levels against the bars since the last check', () => {
  it("a stop the bar's low reached fills at the stop, though the tick's price is back above it", async () => {
    const book = holding({ qty: '10', avgPrice: '100', stopLoss: 95, checkedAt: CHECKED });
    const feed = feedWith(99, [bar(8, 99, 100, 94, 98)]);
    const outcome = await evaluateTick(input(book), { feed, venue: new PaperVenue() });
    expect(outcome.legs[0]).toMatchObject({
      decision: { kind: 'exit', reason: 'stop_loss', level: 95, fill: { kind: 'stop', price: 95, by: 'bar', bar: bar(8, 0, 0, 0, 0).start } },
      order: { side: 'sell', size: '10.000000', status: 'filled', trigger: { kind: 'stop', price: 95 }, price: 94.95 },
    });
    // Checked against the tick's price only (as before), the stop was never met: the position stayed open.
  });

  it('a market that opened past the stop fills at the open; a take-profit reached fills at its level, or at the better open of a gap', () => {
    const long = { qty: '10', avgPrice: '100', stopLoss: 95, takeProfit: 110 };
    expect(levelsAgainst(long, [bar(7, 100, 101, 99, 100), bar(8, 90, 92, 88, 91)], 91).met).toMatchObject({ reason: 'stop_loss', trigger: { kind: 'stop', price: 90 }, by: 'gap' });
    expect(levelsAgainst(long, [bar(8, 105, 111, 104, 106)], 106).met).toMatchObject({ reason: 'take_profit', trigger: { kind: 'take_profit', price: 110 }, by: 'bar' });
    expect(levelsAgainst(long, [bar(8, 112, 113, 108, 109)], 109).met).toMatchObject({ reason: 'take_profit', trigger: { kind: 'take_profit', price: 112 }, by: 'gap' });
    // Both within one bar: which came first is unknown, the stop (the worse) is assumed.
    expect(levelsAgainst(long, [bar(8, 100, 111, 94, 100)], 100).met).toMatchObject({ reason: 'stop_loss', trigger: { price: 95 } });
    // A short: its stop above, its take-profit below.
    const short = { qty: '-10', avgPrice: '100', stopLoss: 105, takeProfit: 90 };
    expect(levelsAgainst(short, [bar(8, 100, 106, 99, 101)], 101).met).toMatchObject({ reason: 'stop_loss', trigger: { kind: 'stop', price: 105 } });
    expect(levelsAgainst(short, [bar(8, 100, 101, 89, 95)], 95).met).toMatchObject({ reason: 'take_profit', trigger: { kind: 'take_profit', price: 90 } });
    // Nothing reached: no exit.
    expect(levelsAgainst(long, [bar(8, 100, 109, 96, 100)], 100).met).toBeUndefined();
  });

  it("a trailing stop follows each bar's high, and its level is met by a later bar's low", () => {
    const trailing = { qty: '1', avgPrice: '100', trailingStopPercent: 2, bestPrice: 100 };
    // The first bar takes the best to 110; the second falls to 107.5, under 110 × 0.98 = 107.8.
    const checked = levelsAgainst(trailing, [bar(7, 100, 110, 100, 109), bar(8, 109, 109, 107.5, 108)], 108.5);
    expect(checked.bestPrice).toBe(110);
    expect(checked.met).toMatchObject({ reason: 'trailing_stop', trigger: { kind: 'stop' }, by: 'bar' });
    expect(checked.met!.trigger.price).toBeCloseTo(107.8, 9);
  });

  it('checks only the bars closed since the last check, and moves the check to the tick', async () => {
    // The low of minute 6 is before the check at minute 7: it does not count.
    const book = holding({ qty: '10', avgPrice: '100', stopLoss: 95, checkedAt: CHECKED });
    const outcome = await decideTick(input(book), { feed: feedWith(99, [bar(6, 99, 99, 90, 99)]), venue: new PaperVenue() });
    expect(outcome.legs.map((l) => l.decision.kind)).not.toContain('exit');
    expect(outcome.book.positions['BTC-USD']).toMatchObject({ stopLoss: 95, checkedAt: AT.toISOString() });
  });
});

describe('the kill switch halts new risk, never protection', () => {
  it('halt: a stop-loss still closes its position, and the strategy places nothing', async () => {
    const book = holding({ qty: '10', avgPrice: '100', stopLoss: 95 });
    const outcome = await evaluateTick(input(book, 'halt'), { feed: feedWith(94, []), venue: new PaperVenue() });
    expect(outcome.legs.map((l) => [l.decision.kind, l.order?.symbol, l.order?.side, l.status, l.order?.status])).toEqual([
      ['exit', 'BTC-USD', 'sell', 'completed', 'filled'],
      ['quant_signal', 'ETH-USD', 'buy', 'halted', 'blocked'],
    ]);
    expect(outcome.book.positions['BTC-USD']).toBeUndefined();
  });

  it("halt: the owner's flatten closes; reduce_only lets the strategy's closes through, halt does not", async () => {
    const book = holding({ qty: '10', avgPrice: '100' });
    const flat = await evaluateTick({ ...input(book, 'halt'), flatten: true }, { feed: feedWith(100, []), venue: new PaperVenue() });
    expect(flat.legs).toMatchObject([{ status: 'completed', decision: { kind: 'flatten' }, order: { side: 'sell', status: 'filled' } }]);
    // The strategy's exit rule (always out) under halt and under reduce_only.
    const out = quantRules.parse({ ...rules, exit: { long: [{ left: 'price', op: '>', right: 0 }] } });
    const closing = (killSwitch: TickInput['killSwitch']) => {
      const tick = input(book, killSwitch);
      return decideTick({ ...tick, version: { ...tick.version, definition: { ...tick.version.definition, universe: ['BTC-USD'], rules: out } as QuantSignalDefinition } }, { feed: feedWith(100, []), venue: new PaperVenue() });
    };
    expect((await closing('halt')).legs).toMatchObject([{ status: 'halted', order: { side: 'sell', status: 'blocked' } }]);
    expect((await closing('reduce_only')).legs).toMatchObject([{ status: 'completed', order: { side: 'sell', status: 'placing' } }]);
  });
});
