// The ccxt venue adapter (TRADING_VENUE=ccxt) against a stand-in of Binance's spot REST API speaking its real
// signed protocol: runtimes decide on the exchange's own prices (the `venue` data source: its ticker and
// candles), orders go out under the execution's id as client order id and fill at the exchange's price and fee;
// a lost answer is looked up by client order id instead of placed again (Binance would take the same id twice
// once the first order filled); a rejected order sends the runtime to review, never a 500; and backtests never
// reach the exchange.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, type TradingHarness } from './harness.js';
import { CcxtVenue } from '../../src/modules/trading/venues/ccxt-venue.js';
import { dec, text } from '../../src/modules/trading/engine/money.js';
import { OrderUnfilled } from '../../src/modules/trading/venues/venue.js';
import { startBinanceStandIn, type BinanceStandIn } from './binance-stand-in.js';

const API_KEY = 'bench-binance-key';
const SECRET = 'bench-binance-secret';
let h: TradingHarness;
let binance: BinanceStandIn;

beforeAll(async () => {
  binance = await startBinanceStandIn(API_KEY, SECRET);
  h = await openTradingHarness({}, ['api'], {
    TRADING_VENUE: 'ccxt',
    TRADING_CCXT_EXCHANGE: 'binance',
    TRADING_CCXT_API_KEY: API_KEY,
    TRADING_CCXT_SECRET: SECRET,
    TRADING_CCXT_SANDBOX: 'true',
    TRADING_CCXT_API_URL: binance.url,
    TRADING_CCXT_SYMBOLS: 'BTC-USD=BTC/USDT',
  });
  binance.now = () => h.clock.now().getTime();
});
afterAll(async () => {
  await h?.close();
  await binance?.close();
});

// short=true: the first tick of an empty book trades, long or short (the stand-in's candles rise: long).
const TRADES_AT_ONCE = 'Trend both ways. fast=2 slow=5 short=true';
// A runtime at a live venue decides on that venue's prices (docs/trading.md#live-venues-trade-on-their-own-prices).
const VENUE = { dataSources: ['venue'] };
const executionsOf = (runtimeId: string) =>
  h.app.ctx.database.query<{ id: string; status: string; order: any; error: any }>(sql`select id, status, "order", error from trading_executions where runtime_id = ${runtimeId} order by id`);
const ordersFor = (clientOrderId: string) => binance.orders.filter((o) => o.clientOrderId === clientOrderId);

describe('the ccxt venue (Binance stand-in)', () => {
  it("places the tick's order under its execution id and books the exchange's fill", async () => {
    const { token, runtimeId } = await launch(h, 'ccxt-trader', TRADES_AT_ONCE, {}, VENUE);
    await h.nextMinute();
    const [execution] = await executionsOf(runtimeId);
    const [order] = ordersFor(execution!.id);
    expect(order).toBeDefined();
    expect(execution).toMatchObject({ status: 'completed', order: { status: 'filled', venue: 'ccxt:binance:sandbox', price: 50_000 } });
    // Sized in BTCUSDT's lots (0.00001, from exchangeInfo): the size sent is the size decided, to the digit.
    expect(execution!.order.size).toBe(order!.qty);
    // Decided at the exchange's own price, so what filled is what risk approved: within fundLimitUsd × maxLeverage.
    expect(execution!.order).toMatchObject({ referencePrice: 50_000, quote: { bid: '50000', ask: '50000' } });
    expect(dec(order!.qty).times(order!.price).toNumber()).toBeLessThanOrEqual(10_000 * 2);
    expect(execution!.order.feeUsd).toBeCloseTo(Number(order!.commission), 8);
    const [stored] = await h.app.ctx.database.query<{ qty: string; cash: string }>(sql`select book->'positions'->'BTC-USD'->>'qty' as qty, book->>'cashUsd' as cash from trading_runtimes where id = ${runtimeId}`);
    expect(stored!.qty).toBe(text(dec(order!.qty).times(order!.side === 'BUY' ? 1 : -1)));
    expect(stored!.cash).toBe(text(dec(10_000).minus(dec(order!.qty).times(order!.price).times(order!.side === 'BUY' ? 1 : -1)).minus(order!.commission)));
    expect(binance.refused).toBe(0);
    const book = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.book;
    expect(book.positions).toMatchObject([{ symbol: 'BTC-USD', avgPrice: 50_000 }]);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it('a lost answer is looked up by client order id on the retry: one order at the exchange, one fill in the book', async () => {
    const { token, runtimeId } = await launch(h, 'ccxt-lost', TRADES_AT_ONCE, {}, VENUE);
    binance.loseNextAnswer = true;
    await h.nextMinute();
    let [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'placing', error: { message: expect.any(String) } });
    expect(ordersFor(execution!.id)).toHaveLength(1);
    h.clock.advance(61_000); // the placement lease lapses; the retry asks the exchange first
    while ((await h.app.ctx.services.trading.consumer.drain()) > 0);
    [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'completed', order: { status: 'filled', price: 50_000 } });
    expect(ordersFor(execution!.id)).toHaveLength(1);
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.book.trades).toBe(1);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });

  it("a rejected order (Binance's insufficient balance) ends rejected with the exchange's words and the runtime in review; a manual run is 409", async () => {
    const { token, runtimeId, strategy } = await launch(h, 'ccxt-rejected', TRADES_AT_ONCE, {}, VENUE);
    binance.rejectNext = true;
    const before = binance.orders.length;
    await h.nextMinute();
    const [execution] = await executionsOf(runtimeId);
    expect(execution).toMatchObject({ status: 'rejected', order: { status: 'rejected' }, error: { code: 'order_rejected', message: expect.stringContaining('insufficient balance') } });
    expect(binance.orders.length).toBe(before);
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(runtime).toMatchObject({ status: 'needs_review', statusReason: expect.stringContaining('insufficient balance'), book: { trades: 0 } });
    expect((await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/executions`, token, {})).status).toBe(409);

    // A backtest of the strategy (a version on embedded data: the venue's own prices have no history) fills on
    // paper: nothing reaches the exchange.
    const { definition } = strategy.latestVersion;
    const replayed = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/versions`, token, { kind: 'quant_signal', schemaVersion: 1, definition: { ...definition, dataSources: ['embedded'] } });
    expect(replayed.status).toBe(201);
    const now = h.clock.now().getTime();
    const replay = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { versionId: replayed.body.data.latestVersion.id, from: new Date(now - 30 * 60_000).toISOString(), to: new Date(now - 60_000).toISOString(), fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 50 });
    expect(replay.status).toBe(200);
    expect(replay.body.data.report.trades).toBeGreaterThan(0);
    expect(replay.body.data.executions.find((e: any) => e.order?.status === 'filled').order.venue).toBe('paper');
    expect(binance.orders.length).toBe(before);
  });

  it("a buy whose fee Binance takes in BTC books the BTC received and that fee in USD (cash pays the whole amount); an order that expired unfilled is a rejection", async () => {
    const { token, runtimeId } = await launch(h, 'ccxt-base-fee', 'Long only. fast=2 slow=5', {}, VENUE);
    binance.commissionAsset = 'BTC';
    let execution;
    for (let i = 0; i < 60 && !execution; i++) {
      await h.nextMinute();
      [execution] = (await executionsOf(runtimeId)).filter((e) => e.order);
    }
    binance.commissionAsset = 'USDT';
    const [order] = ordersFor(execution!.id);
    expect(order).toMatchObject({ side: 'BUY', commissionAsset: 'BTC' });
    const received = text(dec(order!.qty).minus(order!.commission));
    expect(execution).toMatchObject({ status: 'completed', order: { status: 'filled', feeUsd: dec(order!.commission).times(order!.price).toNumber(), size: received } });
    const book = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data.book;
    expect(book.positions[0].qty).toBe(Number(received));
    const [stored] = await h.app.ctx.database.query<{ cash: string }>(sql`select book->>'cashUsd' as cash from trading_runtimes where id = ${runtimeId}`);
    expect(stored!.cash).toBe(text(dec(10_000).minus(dec(order!.qty).times(order!.price)))); // what Binance took: the whole amount
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);

    const expiring = await launch(h, 'ccxt-expired', TRADES_AT_ONCE, {}, VENUE);
    binance.expireNext = true;
    await h.nextMinute();
    const [expired] = await executionsOf(expiring.runtimeId);
    expect(expired).toMatchObject({ status: 'rejected', error: { code: 'order_rejected', message: expect.stringContaining('ended expired with nothing filled') } });
    expect((await h.call('GET', `/agentic-trading/runtimes/${expiring.runtimeId}`, expiring.token)).body.data).toMatchObject({ status: 'needs_review', book: { trades: 0 } });
  });

  it("reads each symbol's lot, tick and minimum notional from the exchange; an immediate-or-cancel limit order fills within its price or comes back unfilled", async () => {
    const venue = new CcxtVenue({ exchange: 'binance', apiKey: API_KEY, secret: SECRET, sandbox: true, apiUrl: binance.url, symbols: { 'BTC-USD': 'BTC/USDT' }, timeoutMs: 5_000 });
    expect(await venue.market('BTC-USD')).toEqual({ lotSize: '0.00001', tickSize: '0.01', minNotionalUsd: '5' });
    const at = new Date();
    const filled = await venue.place({ symbol: 'BTC-USD', side: 'buy', size: '0.00100', referencePrice: 50_000, limitPrice: '50010.00', at, clientOrderId: 'limit-within' });
    expect(filled).toMatchObject({ size: '0.001', price: '50000', feeUsd: '0.05' });
    expect(ordersFor('limit-within')).toMatchObject([{ type: 'LIMIT', status: 'FILLED', limitPrice: '50010.00000000' }]);
    await expect(venue.place({ symbol: 'BTC-USD', side: 'buy', size: '0.00100', referencePrice: 50_000, limitPrice: '49990.00', at, clientOrderId: 'limit-outside' })).rejects.toBeInstanceOf(OrderUnfilled);
    expect(ordersFor('limit-outside')).toMatchObject([{ type: 'LIMIT', status: 'EXPIRED' }]);
    await expect(venue.findOrder({ clientOrderId: 'limit-outside', symbol: 'BTC-USD' })).rejects.toBeInstanceOf(OrderUnfilled);
  });
});
