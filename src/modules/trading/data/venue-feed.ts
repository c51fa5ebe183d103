// The `venue` data source: a live venue's own prices, read through the venue adapter (VenuePrices: ticker and
// candles of the venue's exchange), cached briefly so runtimes ticking together share one request, and bounded
// in age so a tick never decides on a price the venue reported too long ago (docs/trading.md, "Live venues
// trade on their own prices").
import type { Clock } from '../../../platform/clock.js';
import { lastClosedStart, MissingMarketData, StalePrice, VENUE_DATA_SOURCE, type Candle, type MarketDataProvider } from './market-data.js';
import type { VenuePrices } from '../venues/venue.js';

export interface VenueFeedOptions {
  /** A price the venue reported longer ago than this is stale (TRADING_MAX_PRICE_AGE_SECONDS). */
  maxPriceAgeMs: number;
  /** How long one ticker answer serves every read of its symbol. */
  tickerCacheMs?: number;
}

/** A ticker answer serves this long: the ticks of one minute share it, and it stays far inside any sensible age bound. */
export const TICKER_CACHE_MS = 1_000;
/** Candle reads remembered (closed candles never change; the key holds the last one's start, so a new close is a new read). */
const MAX_CACHED_READS = 2_000;
const MINUTE_MS = 60_000;

interface Cached<T> {
  value: Promise<T>;
  fetchedAt: number;
}

/**
 * Market data from the live venue itself, behind the interface every feed has. `price` is the venue's last
 * traded price, refused as StalePrice when the venue reported it more than `maxPriceAgeMs` before now (the
 * tick is then recorded skipped, `stale_price`); `candles` are the venue's closed candles, exactly the ones a
 * tick reads or MissingMarketData. It serves the present only (`live`): backtests replay imported or embedded
 * data instead.
 */
export class VenueFeed implements MarketDataProvider {
  readonly name = VENUE_DATA_SOURCE;
  readonly live = true;
  private readonly tickers = new Map<string, Cached<{ price: string; at: Date }>>();
  private readonly reads = new Map<string, Promise<Candle[]>>();

  constructor(
    private readonly source: VenuePrices,
    private readonly clock: Clock,
    private readonly options: VenueFeedOptions,
  ) {}

  supports(symbol: string): Promise<boolean> {
    return this.source.supports(symbol);
  }

  /** The venue's last price, if the venue reported it within the age bound (`at` is the tick's time; the venue answers for now). */
  async price(symbol: string, _at: Date): Promise<number> {
    const ticker = await this.ticker(symbol);
    const now = this.clock.now().getTime();
    const ageMs = now - ticker.at.getTime();
    if (ageMs > this.options.maxPriceAgeMs) {
      throw new StalePrice(`the venue's last ${symbol} price (${ticker.price}) was reported at ${ticker.at.toISOString()}, ${(ageMs / 1000).toFixed(1)} s before ${new Date(now).toISOString()}, past the ${Math.round(this.options.maxPriceAgeMs / 1000)} s allowed (TRADING_MAX_PRICE_AGE_SECONDS)`);
    }
    const price = Number(ticker.price);
    if (!(price > 0)) throw new MissingMarketData(`the venue answered no ${symbol} price`);
    return price;
  }

  async candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]> {
    const lastStart = lastClosedStart(at, intervalMinutes);
    const key = `${symbol}|${intervalMinutes}|${lastStart}|${count}`;
    let read = this.reads.get(key);
    if (!read) {
      read = this.source.candles(symbol, intervalMinutes, at, count).then((candles) => checked(symbol, intervalMinutes, lastStart, count, candles));
      read.catch(() => this.reads.delete(key)); // a failed read is asked again by the next tick
      if (this.reads.size >= MAX_CACHED_READS) this.reads.delete(this.reads.keys().next().value!);
      this.reads.set(key, read);
    }
    return read;
  }

  /** The symbol's ticker, one request per symbol per TICKER_CACHE_MS (concurrent reads share the request in flight). */
  private ticker(symbol: string): Promise<{ price: string; at: Date }> {
    const now = this.clock.now().getTime();
    const cached = this.tickers.get(symbol);
    if (cached && now >= cached.fetchedAt && now - cached.fetchedAt < (this.options.tickerCacheMs ?? TICKER_CACHE_MS)) return cached.value;
    const value = this.source.ticker(symbol);
    const entry = { value, fetchedAt: now };
    value.catch(() => this.tickers.get(symbol) === entry && this.tickers.delete(symbol));
    this.tickers.set(symbol, entry);
    return value;
  }
}

/** The venue's answer must be the very candles a tick reads (consecutive, ending with the last closed one), else MissingMarketData. */
function checked(symbol: string, intervalMinutes: number, lastStart: number, count: number, candles: Candle[]): Candle[] {
  const firstStart = lastStart - (count - 1) * intervalMinutes;
  const ok = candles.length === count && candles.every((candle, i) => Date.parse(candle.start) === (firstStart + i * intervalMinutes) * MINUTE_MS);
  if (!ok) {
    throw new MissingMarketData(
      `the venue answered ${candles.length} ${symbol} ${intervalMinutes}-minute candles, not the ${count} from ${new Date(firstStart * MINUTE_MS).toISOString()} to ${new Date(lastStart * MINUTE_MS).toISOString()}`,
    );
  }
  return candles;
}
