import { describe, expect, it } from 'vitest';
import { EmbeddedFeed, MissingMarketData, type Candle, type MarketDataProvider } from './market-data.js';
import { MemoFeed } from './memo-feed.js';

/** The embedded feed, counting the reads that reach it, and refusing those before `from` as a gap would. */
function countingFeed(from: number) {
  const embedded = new EmbeddedFeed();
  const reads = { candles: 0, prices: 0 };
  const feed: MarketDataProvider = {
    name: 'imported',
    supports: async () => true,
    async candles(symbol, interval, at, count) {
      reads.candles += 1;
      const candles = await embedded.candles(symbol, interval, at, count);
      if (Date.parse(candles[0]!.start) < from) throw new MissingMarketData(`no ${symbol} candles before ${new Date(from).toISOString()}`);
      return candles.map((c) => ({ ...c })); // fresh objects, as rows read from a database are
    },
    async price(symbol, at) {
      reads.prices += 1;
      return embedded.price(symbol, at);
    },
    gap: async () => null,
  };
  return { feed, reads, embedded };
}

describe('MemoFeed', () => {
  it('answers what the feed answers, reading each candle and price once across trials of any length', async () => {
    const T = Date.UTC(2026, 0, 10);
    const { feed, reads, embedded } = countingFeed(Date.UTC(2026, 0, 1));
    const memo = new MemoFeed(feed);
    const ticks = Array.from({ length: 48 }, (_, i) => new Date(T + i * 3_600_000));
    const first: Candle[][] = [];
    for (const at of ticks) first.push(await memo.candles('BTC-USD', 60, at, 20));
    expect(reads.candles).toBe(48);
    // A second trial over the same ticks, and a third reading fewer candles: nothing reaches the feed.
    for (const [i, at] of ticks.entries()) expect(await memo.candles('BTC-USD', 60, at, 20)).toEqual(first[i]);
    for (const [i, at] of ticks.entries()) expect(await memo.candles('BTC-USD', 60, at, 8)).toEqual(first[i]!.slice(-8));
    expect(reads.candles).toBe(48);
    // A longer read than any before goes to the feed once, and is what the feed says.
    expect(await memo.candles('BTC-USD', 60, ticks[0]!, 30)).toEqual(await embedded.candles('BTC-USD', 60, ticks[0]!, 30));
    expect(reads.candles).toBe(49);
    for (const at of ticks) expect(await memo.price('BTC-USD', at)).toBe(await embedded.price('BTC-USD', at));
    for (const at of ticks) await memo.price('BTC-USD', at);
    expect(reads.prices).toBe(48);
    expect(memo.name).toBe('imported');
    expect(memo.gap).toBeDefined();
  });

  it('keeps no refusal: a read the feed refuses is refused again', async () => {
    const { feed, reads } = countingFeed(Date.UTC(2026, 0, 10));
    const memo = new MemoFeed(feed);
    const early = new Date(Date.UTC(2026, 0, 10, 5));
    await expect(memo.candles('BTC-USD', 60, early, 20)).rejects.toThrow(MissingMarketData);
    await expect(memo.candles('BTC-USD', 60, early, 20)).rejects.toThrow(MissingMarketData);
    expect(reads.candles).toBe(2);
  });

  it('reads a whole window at once from a feed with bulk reads, and then answers every tick from memory as the feed would', async () => {
    const { feed, reads, embedded } = countingFeed(Date.UTC(2026, 0, 1));
    const bulkReads = { ranges: 0, prices: 0 };
    const bulk = {
      async candleRange(symbol: string, interval: number, from: Date, to: Date) {
        bulkReads.ranges += 1;
        const count = (to.getTime() - from.getTime()) / (interval * 60_000) + 1;
        return embedded.candles(symbol, interval, new Date(to.getTime() + interval * 60_000), count);
      },
      async prices(symbol: string, ats: readonly Date[]) {
        bulkReads.prices += 1;
        // The feed has no price at the last tick: that one is asked of the feed when read.
        return Promise.all(ats.map(async (at, i) => (i === ats.length - 1 ? null : embedded.price(symbol, at))));
      },
    };
    const memo = new MemoFeed(Object.assign(feed, { bulk }));
    const ticks = Array.from({ length: 72 }, (_, i) => new Date(Date.UTC(2026, 0, 10) + i * 3_600_000));
    await memo.prefetch(['BTC-USD', 'ETH-USD'], 60, ticks, 20);
    expect(bulkReads).toEqual({ ranges: 2, prices: 2 });
    for (const symbol of ['BTC-USD', 'ETH-USD']) {
      for (const at of ticks) {
        expect(await memo.candles(symbol, 60, at, 20)).toEqual(await embedded.candles(symbol, 60, at, 20));
        expect(await memo.price(symbol, at)).toBe(await embedded.price(symbol, at));
      }
    }
    expect(reads).toEqual({ candles: 0, prices: 2 });
  });
});
