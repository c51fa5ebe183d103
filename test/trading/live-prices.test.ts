// A live venue trades only on its own prices, re-checked at its executable quote before sending (issue 42):
// against the stand-in of Binance's spot API priced at 90,000 while the embedded feed computes BTC-USD near
// 4,400. A runtime there is refused at launch on embedded or imported data; on the venue's own prices (its
// ticker and candles through ccxt) its orders are sized at the exchange's price, and each is valued again at
// the order book's touch plus TRADING_MAX_SLIPPAGE_BPS right before it is sent, so what fills stays within
// fundLimitUsd × maxLeverage however the price moves between the decision and the send. A ticker older than
// TRADING_MAX_PRICE_AGE_SECONDS decides nothing.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CandleStore } from '../../src/modules/trading/data/candle-store.js';
import { EmbeddedFeed } from '../../src/modules/trading/data/market-data.js';
import { dec } from '../../src/modules/trading/engine/money.js';
import { launch, openBinanceHarness, runtimeBody, strategyBody, type TradingHarness } from './harness.js';
import type { BinanceStandIn } from './binance-stand-in.js';

const API_KEY = 'live-prices-key';
const SECRET = 'live-prices-secret';
const VENUE = { dataSources: ['venue'] };
let h: TradingHarness;
let binance: BinanceStandIn;

beforeAll(async () => {
  ({ h, binance } = await openBinanceHarness(API_KEY, SECRET));
});
afterAll(async () => {
  await h?.close();
  await binance?.close();
});

const executionsOf = (runtimeId: string) =>
  h.app.ctx.database.query<{ id: string; status: string; order: any; error: any; decision: any }>(sql`select id, status, "order", error, decision from trading_executions where runtime_id = ${runtimeId} order by id`);
const ordersFor = (clientOrderId: string) => binance.orders.filter((o) => o.clientOrderId === clientOrderId);
const pause = async (token: string, runtimeId: string) => expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);

describe('a live venue trades only on its own prices', () => {
  it('the 20× case: refused at launch on embedded and imported data; on the venue feed what fills stays within fundLimit × leverage while the price moves between decision and send', async () => {
    binance.price = 90_000;
    binance.halfSpread = 5;
    const embeddedPrice = await new EmbeddedFeed().price('BTC-USD', h.clock.now());
    expect(90_000 / embeddedPrice).toBeGreaterThan(15); // the computed feed is nowhere near the exchange

    const token = await h.app.identityToken('live-20x');
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'main' })).body.data;
    const ordersBefore = binance.orders.length;
    // Embedded and imported data still serve backtests, so they may be published; a runtime on them may not launch.
    const embedded = await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Long only. fast=2 slow=5 exposure=1.9'));
    expect(embedded.status).toBe(201);
    const refused = await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(embedded.body.data.latestVersion.id, account.id));
    expect(refused).toMatchObject({ status: 409, body: { data: { reason: 'data_source_not_venue', venue: 'ccxt:binance:sandbox', source: 'embedded' }, message: expect.stringContaining('dataSources: ["venue"]') } });
    const hour = Date.parse('2026-05-31T00:00:00Z');
    await new CandleStore(h.app.ctx.db).upsert('BTC-USD', '1h', Array.from({ length: 24 }, (_, i) => ({ start: hour + i * 3_600_000, open: '89000', high: '91000', low: '88000', close: '90000', volume: '1' })), h.clock.now());
    const imported = await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Long only. fast=2 slow=5', { dataSources: ['imported'], candleInterval: '1h' }));
    expect(imported.status).toBe(201);
    expect(await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(imported.body.data.latestVersion.id, account.id))).toMatchObject({ status: 409, body: { data: { reason: 'data_source_not_venue', source: 'imported' } } });
    expect((await h.call('GET', '/agentic-trading/runtimes', token)).body.data).toEqual([]);

    // On the venue's prices: 1.9 × 10,000 decided at the exchange's 90,000; then the price moves 20 bps up before the order goes out.
    const { runtimeId } = await launch(h, 'live-20x', 'Long only. fast=2 slow=5 exposure=1.9', {}, VENUE);
    binance.moveAfterTicker = 90_180;
    await h.nextMinute();
    const [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'completed', order: { status: 'filled', side: 'buy', referencePrice: 90_000, quote: { bid: '90175', ask: '90185' }, price: 90_185 } });
    const [sent] = ordersFor(execution!.id);
    expect(sent).toMatchObject({ side: 'BUY', qty: execution!.order.size, price: '90185.00' });
    const filledUsd = dec(sent!.qty).times(sent!.price).toNumber();
    expect(filledUsd).toBeGreaterThan(18_000);
    expect(filledUsd).toBeLessThanOrEqual(10_000 * 2);
    expect(binance.orders.length).toBe(ordersBefore + 1);
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime.book.exposureUsd).toBeLessThanOrEqual(20_000);

    // A close is sent whatever the price did since the decision: the flatten's sell meets a bid 5 % lower.
    h.clock.advance(5_000); // past the ticker's cache
    binance.moveAfterTicker = 85_500;
    const flattened = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/flatten`, token, {});
    expect(flattened).toMatchObject({ status: 200, body: { data: { executions: [{ status: 'completed', order: { status: 'filled', side: 'sell', referencePrice: 90_180, price: 85_495, quote: { bid: '85495' } } }] } } });
    await pause(token, runtimeId);
  });

  it('an order sized to the limit keeps the allowance and is sent; one whose quote moved past the allowance is not sent, and the runtime trades at the new price', async () => {
    binance.price = 90_000;
    binance.halfSpread = 5;
    // Asked at the limit itself (2 × 10,000 at 90,000). Sized to the limit, it was refused at the quote: 20 bps up,
    // at the ask plus 50 bps it was 20,141. Sized "as much as allowed" at a live venue, it keeps the allowance twice
    // (20,000 / 1.005²): capped, sent, and what fills is within the limit.
    const atLimit = await launch(h, 'live-at-limit', 'Long only. fast=2 slow=5 exposure=2', {}, VENUE);
    binance.moveAfterTicker = 90_180;
    await h.nextMinute();
    const [capped] = await executionsOf(atLimit.runtimeId);
    expect(capped).toMatchObject({ status: 'completed', error: null, decision: { capped: { limit: 'fund_limit', size: capped!.order.size } }, order: { status: 'filled', referencePrice: 90_000, quote: { ask: '90185' }, price: 90_185 } });
    expect(ordersFor(capped!.id)).toHaveLength(1);
    const filledUsd = dec(capped!.order.size).times(90_185).toNumber();
    expect(filledUsd).toBeGreaterThan(19_500);
    // Valued as the re-check values it (the ask plus the allowance), it is within the limit too.
    expect(filledUsd * 1.005).toBeLessThanOrEqual(20_000);
    await pause(atLimit.token, atLimit.runtimeId);

    // Decided at 90,180, the ask is 91,005 when it would go out: 92 bps, past the 50 allowed.
    const moved = await launch(h, 'live-moved', 'Long only. fast=2 slow=5', {}, VENUE);
    binance.moveAfterTicker = 91_000;
    await h.nextMinute();
    const [first] = await executionsOf(moved.runtimeId);
    expect(first).toMatchObject({ status: 'blocked', order: { referencePrice: 90_180 }, error: { code: 'price_moved', message: expect.stringContaining('bps above the 90180') } });
    expect(ordersFor(first!.id)).toEqual([]);
    // The next tick decides at 91,000 and its order goes out.
    await h.nextMinute();
    const [, second] = await executionsOf(moved.runtimeId);
    expect(second).toMatchObject({ status: 'completed', order: { status: 'filled', referencePrice: 91_000, price: 91_005 } });
    expect(dec(second!.order.size).times(91_005).toNumber()).toBeLessThanOrEqual(20_000);
    await pause(moved.token, moved.runtimeId);
  });

  it('a tick whose venue price is older than TRADING_MAX_PRICE_AGE_SECONDS is skipped (stale_price) and sends nothing; a fresh one trades', async () => {
    binance.price = 90_000;
    const { token, runtimeId } = await launch(h, 'live-stale', 'Long only. fast=2 slow=5', {}, VENUE);
    binance.tickerAgeMs = 45_000;
    const before = binance.orders.length;
    await h.nextMinute();
    binance.tickerAgeMs = 0;
    const [skipped] = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data;
    expect(skipped).toMatchObject({ status: 'skipped', decision: null, order: null, error: { code: 'stale_price', message: expect.stringContaining('45.0 s before') } });
    expect(binance.orders.length).toBe(before);
    await h.nextMinute();
    const latest = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions`, token)).body.data[0];
    expect(latest).toMatchObject({ status: 'completed', order: { status: 'filled', referencePrice: 90_000 } });
    await pause(token, runtimeId);

    // The venue's prices have no history: a backtest of a version on them is refused, not replayed on other prices.
    const strategy = (await h.call('GET', '/agentic-trading/strategies', token)).body.data[0];
    const now = h.clock.now().getTime();
    const replay = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { from: new Date(now - 30 * 60_000).toISOString(), to: new Date(now - 60_000).toISOString(), fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 50 });
    expect(replay).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest' }, message: expect.stringContaining('no history to replay') } });
  });
});
