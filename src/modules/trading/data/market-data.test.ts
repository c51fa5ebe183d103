import { describe, expect, it } from 'vitest';
import { EmbeddedFeed } from './market-data.js';

const feed = new EmbeddedFeed();
const at = new Date('2026-06-01T12:34:56Z');

describe('the embedded feed', () => {
  it('gives the same prices every time, different per symbol and minute, within the documented band', async () => {
    expect(await feed.price('BTC-USD', at)).toBe(await new EmbeddedFeed().price('BTC-USD', at));
    expect(await feed.price('BTC-USD', at)).not.toBe(await feed.price('ETH-USD', at));
    expect(await feed.price('BTC-USD', at)).not.toBe(await feed.price('BTC-USD', new Date(at.getTime() + 60_000)));
    // Within a minute the price holds.
    expect(await feed.price('BTC-USD', at)).toBe(await feed.price('BTC-USD', new Date('2026-06-01T12:34:00Z')));
    // base · e^±0.061 at most.
    const minute = Math.floor(at.getTime() / 60_000);
    const prices = Array.from({ length: 2000 }, (_, i) => feed.priceAtMinute('SOL-USD', minute + i));
    const ratio = Math.max(...prices) / Math.min(...prices);
    expect(ratio).toBeGreaterThan(1.05);
    expect(ratio).toBeLessThan(Math.exp(0.122));
  });

  it('hands out closed candles only, oldest first, each the range of its minutes', async () => {
    const candles = await feed.candles('BTC-USD', 15, at, 4);
    // 12:34 is inside the 12:30 candle, which has not closed: the last closed one started at 12:15.
    expect(candles.map((c) => c.start)).toEqual(['2026-06-01T11:30:00.000Z', '2026-06-01T11:45:00.000Z', '2026-06-01T12:00:00.000Z', '2026-06-01T12:15:00.000Z']);
    const last = candles.at(-1)!;
    const startMinute = Date.parse(last.start) / 60_000;
    const minutes = Array.from({ length: 15 }, (_, i) => feed.priceAtMinute('BTC-USD', startMinute + i));
    expect(last).toEqual({ start: last.start, open: minutes[0], close: minutes[14], high: Math.max(...minutes), low: Math.min(...minutes) });
  });

  it('quotes symbol-shaped names only', async () => {
    expect(await feed.supports('BTC-USD')).toBe(true);
    expect(await feed.supports('AAPL')).toBe(true);
    expect(await feed.supports('btc-usd')).toBe(false);
    expect(await feed.supports('BTC USD')).toBe(false);
  });
});
