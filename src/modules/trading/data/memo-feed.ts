import { lastClosedStart, type Candle, type MarketDataProvider } from './market-data.js';

/** What a stored feed can read at once for a whole replay (imported-feed.ts). */
export interface BulkReads {
  candleRange(symbol: string, intervalMinutes: number, from: Date, to: Date): Promise<Candle[]>;
  /** The price at each instant, null where the feed has none (the tick's own read then refuses it). */
  prices(symbol: string, ats: readonly Date[]): Promise<Array<number | null>>;
}

const MINUTE_MS = 60_000;

/**
 * A feed that remembers what it read, for a replay: an optimisation's trials replay the same ticks over the same
 * candles, so only the first one reads them; and a feed that reads in bulk (imported data: otherwise two statements
 * a tick) is read for the whole window first (`prefetch`). Candles are kept once each, by symbol, interval and
 * start, so reads of different counts (a longer period) share them; prices by symbol and instant. It answers exactly
 * what the feed answers (a candle or price it lacks is asked of the feed, whose refusal is not kept), and lives as
 * long as the replay.
 */
export class MemoFeed implements MarketDataProvider {
  readonly name: string;
  private readonly candlesBy = new Map<string, Map<number, Candle>>();
  private readonly prices = new Map<string, number>();

  constructor(
    private readonly feed: MarketDataProvider & { bulk?: BulkReads },
  ) {
    this.name = feed.name;
    if (feed.gap) this.gap = (symbol, intervalMinutes, ranges) => feed.gap!(symbol, intervalMinutes, ranges);
  }

  gap?: MarketDataProvider['gap'];

  /**
   * Reads at once what ticks at `ticks` read: each symbol's `count` candles of the interval before each tick, and its
   * price at each tick. Nothing for a feed without bulk reads (the embedded one computes them, and remembers).
   */
  async prefetch(symbols: readonly string[], intervalMinutes: number, ticks: readonly Date[], count: number): Promise<void> {
    const bulk = this.feed.bulk;
    if (!bulk || ticks.length === 0) return;
    for (const symbol of symbols) {
      const last = lastClosedStart(ticks.at(-1)!, intervalMinutes);
      const first = lastClosedStart(ticks[0]!, intervalMinutes) - (count - 1) * intervalMinutes;
      const known = this.known(symbol, intervalMinutes);
      for (const candle of await bulk.candleRange(symbol, intervalMinutes, new Date(first * MINUTE_MS), new Date(last * MINUTE_MS))) known.set(Date.parse(candle.start) / MINUTE_MS, candle);
      const prices = await bulk.prices(symbol, ticks);
      prices.forEach((price, i) => price !== null && this.prices.set(`${symbol}|${ticks[i]!.getTime()}`, price));
    }
  }

  private known(symbol: string, intervalMinutes: number): Map<number, Candle> {
    const key = `${symbol}|${intervalMinutes}`;
    const known = this.candlesBy.get(key) ?? new Map<number, Candle>();
    this.candlesBy.set(key, known);
    return known;
  }

  supports(symbol: string): Promise<boolean> {
    return this.feed.supports(symbol);
  }

  async candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]> {
    const known = this.known(symbol, intervalMinutes);
    const last = lastClosedStart(at, intervalMinutes);
    const kept: Candle[] = [];
    for (let start = last - (count - 1) * intervalMinutes; start <= last; start += intervalMinutes) {
      const candle = known.get(start);
      if (!candle) break;
      kept.push(candle);
    }
    if (kept.length === count) return kept;
    const read = await this.feed.candles(symbol, intervalMinutes, at, count);
    for (const candle of read) known.set(Date.parse(candle.start) / MINUTE_MS, candle);
    return read;
  }

  async price(symbol: string, at: Date): Promise<number> {
    const key = `${symbol}|${at.getTime()}`;
    const known = this.prices.get(key);
    if (known !== undefined) return known;
    const price = await this.feed.price(symbol, at);
    this.prices.set(key, price);
    return price;
  }
}
