// A runtime on imported data (issue 42): imported candles are files, so a runtime launched on them used to go
// active and fail its first tick on candles nobody imported. Now the launch is refused (409
// market_data_not_current, naming what a tick now reads and what is missing) unless the data holds the candles
// a tick at this moment reads; with them imported as they close, the runtime ticks like any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CandleRow } from '../../src/modules/trading/data/candle-file.js';
import { CandleStore } from '../../src/modules/trading/data/candle-store.js';
import { openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const HOUR = 3_600_000;
/** `count` hourly candles from `from`, rising a dollar an hour. */
const hours = (from: string, count: number): CandleRow[] =>
  Array.from({ length: count }, (_, i) => ({ start: Date.parse(from) + i * HOUR, open: String(100 + i), high: String(102 + i), low: String(99 + i), close: String(101 + i), volume: '1' }));
const imported = { dataSources: ['imported'], candleInterval: '1h' };

describe('a runtime on imported data', () => {
  it('is refused at launch when the data does not hold the candles a tick now reads, and ticks once they are imported', async () => {
    const candles = new CandleStore(h.app.ctx.db);
    // The shipped kind of data: a past window (March 2020), nowhere near the clock (2026-06-01T00:00:30Z).
    await candles.upsert('BTC-USD', '1h', hours('2020-03-01T00:00:00Z', 48), h.clock.now());
    const token = await h.app.identityToken('imported-trader');
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'main' })).body.data;
    const strategy = await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Trend follow. fast=5 slow=20', imported));
    expect(strategy.status).toBe(201);
    const versionId = strategy.body.data.latestVersion.id;

    const refused = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(versionId, account.id));
    expect(refused).toMatchObject({
      status: 409,
      body: {
        data: { reason: 'market_data_not_current', source: 'imported', symbol: 'BTC-USD', interval: '1h', needFrom: '2026-05-31T04:00:00.000Z', needTo: '2026-05-31T23:00:00.000Z', firstMissing: '2026-05-31T04:00:00.000Z', missing: 20 },
        message: expect.stringContaining('imported as they close'),
      },
    });
    expect((await h.call('GET', '/agentic-trading/runtimes', token)).body.data).toEqual([]);

    // An interval imports cannot hold (30m) is refused with the feed's own words.
    const halfHourly = await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Trend follow. fast=5 slow=20', { ...imported, candleInterval: '30m' }));
    expect(await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(halfHourly.body.data.latestVersion.id, account.id))).toMatchObject({
      status: 409,
      body: { data: { reason: 'market_data_not_current' }, message: expect.stringContaining('no 30-minute candles') },
    });

    // The last day imported up to the hour that just closed: the launch goes through and the first ticks decide.
    await candles.upsert('BTC-USD', '1h', hours('2026-05-31T00:00:00Z', 24), h.clock.now());
    const created = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(versionId, account.id));
    expect(created.status).toBe(201);
    await h.settle();
    const runtimeId = created.body.data.id;
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.status).toBe('active');
    await h.nextMinute();
    await h.nextMinute();
    const executions = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data;
    expect(executions.map((e: { status: string }) => e.status)).toEqual(['completed', 'completed']);
    expect(executions.at(-1)).toMatchObject({ error: null, decision: { action: 'buy', signals: [{ symbol: 'BTC-USD', price: 124 }] } });
  });
});
