// Step 1 of a tick (engine.ts): the protective levels a position carries (stop-loss, trailing stop, take-profit),
// checked before any strategy runs. A level is met by the candles closed since the last check (each bar's high and
// low, as a resting order at the venue would have been), then by the tick's price; a position whose level was met
// is closed whole this tick, filling as the resting order would have (ExitTrigger): a stop at its level, or at the
// bar's open when the market gapped past it; a take-profit at its level, or at the better open of a gap.
import { type Book, type Position, qtyOf } from './book.js';
import { digestOf } from '../../../platform/canonical-json.js';
import { DEFAULT_LOOKBACK, type LlmAgentDefinition } from '../strategies/llm-agent.js';
import { CANDLE_INTERVALS, lastClosedStart, type Candle, type MarketDataProvider } from '../data/market-data.js';
import { candlesRead, type QuantSignalDefinition } from '../strategies/quant-signal.js';
import type { Decided, ExitTrigger, TickInput } from './tick-types.js';

const MINUTE_MS = 60_000;

export type ExitReason = 'stop_loss' | 'trailing_stop' | 'take_profit';

/** A level met: which, at what level, and how the exit fills (`by`: the tick's price, a bar's range, or a bar's open past it). */
export interface LevelMet {
  reason: ExitReason;
  level: number;
  trigger: ExitTrigger;
  by: 'price' | 'bar' | 'gap';
  /** The bar that met it (its start), when one did. */
  bar?: string;
}

/**
 * Each guarded position's levels against the bars closed since it was last checked (`checkedAt`), then the tick's
 * price: each trailing stop's best price follows the market (the book answered carries it, and each position's
 * `checkedAt` moves to the tick), and each position whose level was met is its symbol's exit this tick (it only
 * reduces, so no limit blocks it; the kill switch's halt lets it through). One exit per position.
 *
 * Bars are the strategy's candles (`candleInterval`), those starting at or after `checkedAt` and closed by the tick,
 * at most as many as the tick reads anyway (so a backtest's coverage check holds them). A live venue's feed is read
 * for the tick's price only: there the venue holds the resting orders (protective-orders.ts).
 */
export async function guardPositions(input: TickInput, feed: MarketDataProvider): Promise<{ book: Book; exits: Decided[] }> {
  const guarded = Object.entries(input.book.positions).filter(([, p]) => p.stopLoss !== undefined || p.takeProfit !== undefined || p.trailingStopPercent !== undefined);
  if (guarded.length === 0) return { book: input.book, exits: [] };
  const interval = CANDLE_INTERVALS[input.version.definition.candleInterval]!;
  const prices: Record<string, number> = {};
  const positions = { ...input.book.positions };
  const met: Array<[string, LevelMet]> = [];
  for (const [symbol, p] of guarded) {
    const price = (prices[symbol] = await feed.price(symbol, input.at));
    const bars = feed.live || p.checkedAt === undefined ? [] : await barsSince(feed, symbol, interval, p.checkedAt, input.at, readsPerTick(input));
    const checked = levelsAgainst(p, bars, price);
    positions[symbol] = { ...p, ...(checked.bestPrice !== undefined ? { bestPrice: checked.bestPrice } : {}), ...(feed.live ? {} : { checkedAt: input.at.toISOString() }) };
    if (checked.met) met.push([symbol, checked.met]);
  }
  const book = { ...input.book, positions };
  const exits = met.map(([symbol, m]): Decided => {
    const long = qtyOf(positions[symbol]) > 0;
    const decision = { kind: 'exit', reason: m.reason, level: m.level, price: prices[symbol]!, fill: { ...m.trigger, by: m.by, ...(m.bar ? { bar: m.bar } : {}) }, action: long ? 'sell' : 'buy', symbol };
    const inputsDigest = digestOf({ versionHash: input.version.contentHash, at: input.at.toISOString(), exit: decision, book, killSwitch: input.killSwitch });
    return { wishes: [{ symbol, target: 0, minUsd: 0, trigger: m.trigger }], decision, prices: { [symbol]: prices[symbol]! }, inputsDigest };
  });
  return { book, exits };
}

/**
 * The position's levels against the bars (oldest first), then the price. Per bar: a trailing stop's best price moves
 * to the open; a stop the open is past fills at the open (a gap), so does a take-profit the open is past; then a
 * stop the bar's low (a short's: high) reached fills at the stop, a take-profit its high (low) reached at the
 * take-profit. The stop comes first where both were reached within one bar (which came first is unknown: the worse
 * is assumed). The best price then moves to the bar's high (low). Last the tick's price, as before bars were read:
 * a stop it is past fills from it, a take-profit it reached at the level. Of a stop-loss and a trailing stop the
 * nearer one is the stop (the stop-loss on a tie).
 */
export function levelsAgainst(p: Position, bars: Candle[], price: number): { bestPrice?: number; met?: LevelMet } {
  const long = qtyOf(p) > 0;
  const past = (value: number, level: number) => (long ? value <= level : value >= level);
  const reached = (value: number, level: number) => (long ? value >= level : value <= level);
  const further = (a: number, b: number) => (long ? Math.max(a, b) : Math.min(a, b));
  let best = p.bestPrice;
  const follow = (value: number) => {
    if (p.trailingStopPercent !== undefined) best = best === undefined ? value : further(best, value);
  };
  const stop = (): { reason: ExitReason; level: number } | null => {
    const trail = p.trailingStopPercent === undefined || best === undefined ? undefined : best * (long ? 1 - p.trailingStopPercent / 100 : 1 + p.trailingStopPercent / 100);
    if (p.stopLoss === undefined) return trail === undefined ? null : { reason: 'trailing_stop', level: trail };
    if (trail === undefined || further(p.stopLoss, trail) === p.stopLoss) return { reason: 'stop_loss', level: p.stopLoss };
    return { reason: 'trailing_stop', level: trail };
  };
  const tp = p.takeProfit;
  for (const bar of bars) {
    follow(bar.open);
    const s = stop();
    const [worst, bestOfBar] = long ? [bar.low, bar.high] : [bar.high, bar.low];
    if (s && past(bar.open, s.level)) return { bestPrice: best, met: { ...s, trigger: { kind: 'stop', price: bar.open }, by: 'gap', bar: bar.start } };
    if (tp !== undefined && reached(bar.open, tp)) return { bestPrice: best, met: { reason: 'take_profit', level: tp, trigger: { kind: 'take_profit', price: bar.open }, by: 'gap', bar: bar.start } };
    if (s && past(worst, s.level)) return { bestPrice: best, met: { ...s, trigger: { kind: 'stop', price: s.level }, by: 'bar', bar: bar.start } };
    if (tp !== undefined && reached(bestOfBar, tp)) return { bestPrice: best, met: { reason: 'take_profit', level: tp, trigger: { kind: 'take_profit', price: tp }, by: 'bar', bar: bar.start } };
    follow(bestOfBar);
  }
  follow(price);
  const s = stop();
  if (s && past(price, s.level)) return { bestPrice: best, met: { ...s, trigger: { kind: 'stop', price }, by: 'price' } };
  if (tp !== undefined && reached(price, tp)) return { bestPrice: best, met: { reason: 'take_profit', level: tp, trigger: { kind: 'take_profit', price: tp }, by: 'price' } };
  return { bestPrice: best };
}

/** The candles a tick of this version reads per symbol: the most bars a protective check reads. */
function readsPerTick(input: TickInput): number {
  const { kind, definition } = input.version;
  return kind === 'llm_agent' ? ((definition as LlmAgentDefinition).lookback ?? DEFAULT_LOOKBACK) : candlesRead(definition as QuantSignalDefinition);
}

/** The bars of `intervalMinutes` starting at or after `since` and closed by `at`, oldest first: the latest `most` of them. */
async function barsSince(feed: MarketDataProvider, symbol: string, intervalMinutes: number, since: string, at: Date, most: number): Promise<Candle[]> {
  const first = Math.ceil(Date.parse(since) / MINUTE_MS / intervalMinutes) * intervalMinutes;
  const last = lastClosedStart(at, intervalMinutes);
  const count = Math.min(most, Math.floor((last - first) / intervalMinutes) + 1);
  return count > 0 ? feed.candles(symbol, intervalMinutes, at, count) : [];
}
