import type { Db } from '../../../platform/db.js';
import { IMPORT_INTERVALS } from './candle-file.js';
import { CandleStore } from './candle-store.js';
import { lastClosedStart, MissingMarketData, type Candle, type MarketDataProvider } from './market-data.js';

const MINUTE_MS = 60_000;

/** The interval's name for its length in minutes (`1h` for 60), or null when imports cannot hold it. */
const intervalName = (minutes: number) => Object.entries(IMPORT_INTERVALS).find(([, m]) => m === minutes)?.[0] ?? null;

/**
 * The data source `imported`: candles an operator imported (`tollgate trading import`), read from the
 * database as they were written. A read the data does not cover throws MissingMarketData (the tick
 * fails and is recorded); backtests check their whole window first (`gap`) and answer 422 naming it.
 */
export class ImportedFeed implements MarketDataProvider {
  readonly name = 'imported';
  readonly store: CandleStore;

  constructor(db: Db) {
    this.store = new CandleStore(db);
  }

  supports(symbol: string): Promise<boolean> {
    return this.store.has(symbol);
  }

  async candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]> {
    const interval = this.interval(intervalMinutes);
    const lastStart = new Date(lastClosedStart(at, intervalMinutes) * MINUTE_MS);
    const candles = await this.store.candles(symbol, interval, lastStart, count);
    const firstStart = lastStart.getTime() - (count - 1) * intervalMinutes * MINUTE_MS;
    if (candles.length < count || Date.parse(candles[0]!.start) !== firstStart || candles.at(-1)!.start !== lastStart.toISOString()) {
      throw new MissingMarketData(`imported data lacks ${symbol} ${interval} candles between ${new Date(firstStart).toISOString()} and ${lastStart.toISOString()}`);
    }
    return candles;
  }

  async price(symbol: string, at: Date): Promise<number> {
    const close = await this.store.lastClose(symbol, at);
    if (close === null) throw new MissingMarketData(`imported data has no ${symbol} candle closed by ${at.toISOString()}`);
    return close;
  }

  /** Bulk reads for a replay (memo-feed.ts): the window's candles, and the prices at every tick, one statement each. */
  readonly bulk = {
    candleRange: (symbol: string, intervalMinutes: number, from: Date, to: Date) => this.store.range(symbol, this.interval(intervalMinutes), from, to),
    prices: (symbol: string, ats: readonly Date[]) => this.store.lastCloses(symbol, ats),
  };

  gap(symbol: string, intervalMinutes: number, ranges: ReadonlyArray<{ from: Date; to: Date }>) {
    return this.store.gap(symbol, this.interval(intervalMinutes), ranges);
  }

  private interval(minutes: number): string {
    const name = intervalName(minutes);
    if (!name) throw new MissingMarketData(`imported data has no ${minutes}-minute candles (imports hold ${Object.keys(IMPORT_INTERVALS).join(', ')})`);
    return name;
  }
}
