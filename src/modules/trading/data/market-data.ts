/** One OHLC candle: `start` is its first minute; it is closed once `start + interval` has passed. */
export interface Candle {
  start: string;
  open: number;
  high: number;
  low: number;
  close: number;
}

/** Where executions and backtests read prices. A real feed implements the same two reads. */
export interface MarketDataProvider {
  readonly name: string;
  /** Whether the feed quotes this symbol. */
  supports(symbol: string): Promise<boolean>;
  /** The `count` most recent candles of `symbol` closed at `at`, oldest first. */
  candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]>;
  /** The price a market order would meet at `at`. */
  price(symbol: string, at: Date): Promise<number>;
  /**
   * A feed with holes (imported data): the first candle start within `ranges` (each [from, to], starts
   * inclusive) it lacks at the interval, and how many are missing; null when it has them all. A feed
   * without it has every candle.
   */
  gap?(symbol: string, intervalMinutes: number, ranges: ReadonlyArray<{ from: Date; to: Date }>): Promise<{ first: Date; missing: number } | null>;
  /** A live venue's own prices (venue-feed.ts): the present only, so no backtest replays over them. */
  readonly live?: boolean;
}

/** The feed lacks candles a tick or a backtest needs (a gap in imported data). */
export class MissingMarketData extends Error {
  override readonly name = 'MissingMarketData';
}

/** The data source of a deployment's live venue: that venue's own prices (venue-feed.ts), the only ones its runtimes trade on. */
export const VENUE_DATA_SOURCE = 'venue';

/** The feed's price is older than TRADING_MAX_PRICE_AGE_SECONDS: the tick decides nothing (recorded `skipped`, `stale_price`). */
export class StalePrice extends Error {
  override readonly name = 'StalePrice';
}

/** Start (Unix minute) of the last candle of `intervalMinutes` that has closed at `at`. */
export function lastClosedStart(at: Date, intervalMinutes: number): number {
  const now = Math.floor(at.getTime() / MINUTE_MS);
  return Math.floor(now / intervalMinutes) * intervalMinutes - intervalMinutes;
}

/** What a symbol looks like (BTC-USD, AAPL); the embedded feed quotes every one. */
export const SYMBOL_PATTERN = /^[A-Z0-9]{1,12}(-[A-Z]{2,5})?$/;

export const CANDLE_INTERVALS: Record<string, number> = { '1m': 1, '5m': 5, '15m': 15, '30m': 30, '1h': 60, '4h': 240, '1d': 1440 };

const MINUTE_MS = 60_000;
/** Candles the embedded feed remembers (about 40 MB at most). */
const MAX_CACHED = 200_000;
const TWO_PI = 2 * Math.PI;

/** FNV-1a over the symbol: its seed. */
function seedOf(symbol: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < symbol.length; i++) hash = Math.imul(hash ^ symbol.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** An integer mix (murmur3's finalizer) of the seed and the minute: uniform in [-1, 1). */
function noise(seed: number, minute: number): number {
  let h = (seed ^ Math.imul(minute | 0, 0x9e3779b1) ^ Math.imul(Math.floor(minute / 2 ** 32), 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  h = (h ^ (h >>> 16)) >>> 0;
  return h / 2 ** 31 - 1;
}

/**
 * The embedded feed: a deterministic price for every symbol and minute, computed, not stored, so any
 * window can be replayed exactly (docs/trading.md, "The embedded feed"). For a symbol with seed s
 * (FNV-1a of its name) and minute m since the epoch:
 *   base = 20 + (s mod 9980)
 *   p(m) = base · exp(0.04·sin(2πm/1440 + φ1) + 0.015·sin(2πm/97 + φ2) + 0.004·sin(2πm/11 + φ3) + 0.002·n(s, m))
 * with φk = 2π·((s >> 8k) & 255)/256 and n a hash of (s, m) uniform in [-1, 1). A candle of I minutes
 * starting at minute a has open p(a), close p(a+I−1), and the high and low of p over its minutes.
 */
export class EmbeddedFeed implements MarketDataProvider {
  readonly name = 'embedded';
  private readonly cache = new Map<string, Candle>();

  async supports(symbol: string): Promise<boolean> {
    return SYMBOL_PATTERN.test(symbol);
  }

  priceAtMinute(symbol: string, minute: number): number {
    const seed = seedOf(symbol);
    const phase = (k: number) => (TWO_PI * ((seed >>> (8 * k)) & 255)) / 256;
    const base = 20 + (seed % 9980);
    const wave =
      0.04 * Math.sin((TWO_PI * minute) / 1440 + phase(1)) +
      0.015 * Math.sin((TWO_PI * minute) / 97 + phase(2)) +
      0.004 * Math.sin((TWO_PI * minute) / 11 + phase(3)) +
      0.002 * noise(seed, minute);
    return base * Math.exp(wave);
  }

  async price(symbol: string, at: Date): Promise<number> {
    return this.priceAtMinute(symbol, Math.floor(at.getTime() / MINUTE_MS));
  }

  async candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]> {
    const lastStart = lastClosedStart(at, intervalMinutes);
    const candles: Candle[] = [];
    for (let start = lastStart - (count - 1) * intervalMinutes; start <= lastStart; start += intervalMinutes) candles.push(this.candle(symbol, intervalMinutes, start));
    return candles;
  }

  /**
   * One candle, remembered: runtimes of one symbol share their candles, and a tick needs only the one
   * that closed since the last (a 1d candle is 1,440 prices). The oldest are forgotten past MAX_CACHED.
   */
  private candle(symbol: string, intervalMinutes: number, start: number): Candle {
    const key = `${symbol}|${intervalMinutes}|${start}`;
    const cached = this.cache.get(key);
    if (cached) return cached;
    let high = -Infinity;
    let low = Infinity;
    for (let m = start; m < start + intervalMinutes; m++) {
      const p = this.priceAtMinute(symbol, m);
      if (p > high) high = p;
      if (p < low) low = p;
    }
    const candle = { start: new Date(start * MINUTE_MS).toISOString(), open: this.priceAtMinute(symbol, start), high, low, close: this.priceAtMinute(symbol, start + intervalMinutes - 1) };
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, candle);
    return candle;
  }
}
