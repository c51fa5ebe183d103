import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../platform/clock.js';
import { MissingMarketData, StalePrice, type Candle } from './market-data.js';
import type { VenuePrices } from '../venues/venue.js';
import { TICKER_CACHE_MS, VenueFeed } from './venue-feed.js';

// The `venue` data source: the venue's ticker and candles, cached briefly, and refused when the venue's price is old.
function venueAt(clock: ManualClock) {
  const calls = { ticker: 0, candles: 0 };
  const state = { price: '90000.5', ageMs: 0, fail: false, candles: null as Candle[] | null };
  const prices: VenuePrices = {
    supports: async (symbol) => symbol === 'BTC-USD',
    ticker: async () => {
      calls.ticker += 1;
      if (state.fail) throw new Error('connect ECONNREFUSED');
      return { price: state.price, at: new Date(clock.now().getTime() - state.ageMs) };
    },
    candles: async (_symbol, interval, at, count) => {
      calls.candles += 1;
      if (state.candles) return state.candles;
      const last = Math.floor(at.getTime() / (interval * 60_000)) * interval - interval;
      return Array.from({ length: count }, (_, i) => ({ start: new Date((last - (count - 1 - i) * interval) * 60_000).toISOString(), open: 1, high: 1, low: 1, close: 1 }));
    },
    quote: async () => ({ bid: '1', ask: '1' }),
  };
  return { prices, calls, state };
}

describe('the venue feed', () => {
  it("answers the venue's last price while it is fresh, and StalePrice once the venue reported it longer ago than the bound", async () => {
    const clock = new ManualClock('2026-06-01T00:00:30Z');
    const venue = venueAt(clock);
    const feed = new VenueFeed(venue.prices, clock, { maxPriceAgeMs: 30_000 });
    expect(feed).toMatchObject({ name: 'venue', live: true });
    expect(await feed.supports('BTC-USD')).toBe(true);
    expect(await feed.price('BTC-USD', clock.now())).toBe(90_000.5);
    clock.advance(TICKER_CACHE_MS);
    venue.state.ageMs = 30_001;
    await expect(feed.price('BTC-USD', clock.now())).rejects.toThrow(StalePrice);
    await expect(feed.price('BTC-USD', clock.now())).rejects.toThrow(/reported at 2026-06-01T00:00:00.999Z, 30.0 s before .*past the 30 s allowed/);
  });

  it('asks the venue for a ticker once per symbol and second, concurrent reads sharing it; a failed answer is asked again', async () => {
    const clock = new ManualClock('2026-06-01T00:00:30Z');
    const venue = venueAt(clock);
    const feed = new VenueFeed(venue.prices, clock, { maxPriceAgeMs: 30_000 });
    await Promise.all(Array.from({ length: 20 }, () => feed.price('BTC-USD', clock.now())));
    clock.advance(TICKER_CACHE_MS - 1);
    await feed.price('BTC-USD', clock.now());
    expect(venue.calls.ticker).toBe(1);
    clock.advance(1);
    venue.state.fail = true;
    await expect(feed.price('BTC-USD', clock.now())).rejects.toThrow('ECONNREFUSED');
    venue.state.fail = false;
    venue.state.price = '91000';
    expect(await feed.price('BTC-USD', clock.now())).toBe(91_000);
    expect(venue.calls.ticker).toBe(3);
  });

  it('answers exactly the candles a tick reads, remembered until the next one closes; any other answer is MissingMarketData', async () => {
    const clock = new ManualClock('2026-06-01T00:00:30Z');
    const venue = venueAt(clock);
    const feed = new VenueFeed(venue.prices, clock, { maxPriceAgeMs: 30_000 });
    const candles = await feed.candles('BTC-USD', 5, new Date('2026-06-01T00:12:00Z'), 3);
    expect(candles.map((c) => c.start)).toEqual(['2026-05-31T23:55:00.000Z', '2026-06-01T00:00:00.000Z', '2026-06-01T00:05:00.000Z']);
    await feed.candles('BTC-USD', 5, new Date('2026-06-01T00:14:59Z'), 3);
    expect(venue.calls.candles).toBe(1);
    await feed.candles('BTC-USD', 5, new Date('2026-06-01T00:15:00Z'), 3);
    expect(venue.calls.candles).toBe(2);
    // The venue answered the candle still open, or missed one: not what the tick reads.
    venue.state.candles = candles.slice(1);
    await expect(feed.candles('BTC-USD', 5, new Date('2026-06-01T00:20:00Z'), 3)).rejects.toThrow(MissingMarketData);
    venue.state.candles = null;
    expect(await feed.candles('BTC-USD', 5, new Date('2026-06-01T00:20:00Z'), 3)).toHaveLength(3);
  });
});
