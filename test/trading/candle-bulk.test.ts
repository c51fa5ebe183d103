// The imported feed's bulk reads (a replay's window read at once, memo-feed.ts) answer what its reads tick by tick
// answer: the window's candles, and at each instant the close of the latest candle of any interval closed by then.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CandleStore } from '../../src/modules/trading/data/candle-store.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await openTestDatabase();
});
afterAll(async () => db?.close());

const HOUR = 3_600_000;
const T = Date.UTC(2025, 0, 1);
const candle = (start: number, close: number) => ({ start, open: String(close), high: String(close + 1), low: String(close - 1), close: String(close), volume: '1' });

describe('CandleStore bulk reads', () => {
  it('reads a range and the prices at many instants as its one-by-one reads do, across intervals and gaps', async () => {
    const store = new CandleStore(db.database.db);
    // 48 hourly candles with a gap at hours 10-12, and 1m candles for hour 30's first 20 minutes (they price first).
    const hourly = Array.from({ length: 48 }, (_, i) => i).filter((i) => i < 10 || i > 12).map((i) => candle(T + i * HOUR, 100 + i));
    await store.upsert('BTC-USD', '1h', hourly, new Date());
    await store.upsert('BTC-USD', '1m', Array.from({ length: 20 }, (_, m) => candle(T + 30 * HOUR + m * 60_000, 500 + m)), new Date());
    const range = await store.range('BTC-USD', '1h', new Date(T + 5 * HOUR), new Date(T + 20 * HOUR));
    expect(range.map((c) => c.close)).toEqual([105, 106, 107, 108, 109, 113, 114, 115, 116, 117, 118, 119, 120]);
    expect(range.at(-1)).toEqual((await store.candles('BTC-USD', '1h', new Date(T + 20 * HOUR), 1))[0]);
    const ats = Array.from({ length: 60 * 40 }, (_, i) => new Date(T - HOUR + i * 90_000 + 7_000));
    const one = await Promise.all(ats.map((at) => store.lastClose('BTC-USD', at)));
    expect(one.filter((p) => p !== null && p >= 500).length).toBeGreaterThan(5); // the 1m candles price within hour 30
    expect(one[0]).toBeNull(); // before the first candle closed
    expect(await store.lastCloses('BTC-USD', ats)).toEqual(one);
    expect(await store.lastCloses('ETH-USD', ats.slice(0, 3))).toEqual([null, null, null]);
  });
});
