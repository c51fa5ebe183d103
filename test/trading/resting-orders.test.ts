// Issue 42 item 4: at a live venue a position's stop-loss rests at the exchange as its own order (ccxt's createOrder
// with stopLossPrice: Binance spot's STOP_LOSS), reconciled each tick, so the protection survives our outage. Against
// the Binance stand-in, which holds resting orders as Binance does (NEW, the asset locked, filled once the price
// reaches the stop): the stop rests after the entry, is rested again when the exchange lost it, fills while no tick
// runs and is then booked once as the position's exit (no second sell), and is cancelled before our own close (which
// the locked asset would otherwise refuse).
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBinanceHarness, runtimeBody, type TradingHarness } from './harness.js';
import type { BinanceStandIn } from './binance-stand-in.js';

const API_KEY = 'resting-key';
const SECRET = 'resting-secret';
let h: TradingHarness;
let binance: BinanceStandIn;

beforeAll(async () => {
  ({ h, binance } = await openBinanceHarness(API_KEY, SECRET));
});
afterAll(async () => {
  await h?.close();
  await binance?.close();
});

// Long whenever flat, a stop 1 % under the entry and a take-profit 5 % over it.
const rules = { indicators: { fast: { type: 'sma', period: 2 } }, entry: { long: [{ left: 'price', op: '>', right: 0 }] }, sizing: { exposure: 0.5 }, stopLossPercent: 1, takeProfitPercent: 5 };
const executionsOf = (runtimeId: string) =>
  h.app.ctx.database.query<{ id: string; leg: number; status: string; order: any; error: any; decision: any }>(sql`select id, leg, status, "order", error, decision from trading_executions where runtime_id = ${runtimeId} order by id`);
const bookOf = async (runtimeId: string) => (await h.app.ctx.database.query<{ book: any }>(sql`select book from trading_runtimes where id = ${runtimeId}`))[0]!.book;
const resting = () => binance.orders.filter((o) => o.type === 'STOP_LOSS' || o.type === 'TAKE_PROFIT');

describe('protective orders resting at a live venue', () => {
  it('rests the stop-loss at the exchange, rests it again when lost, books its fill made while no tick ran, and cancels it before our own close', async () => {
    binance.price = 50_000;
    binance.halfSpread = 5;
    binance.balances.BTC = 0; // the account holds only what the runtime bought: a resting sell locks all of it
    const token = await h.app.identityToken('resting');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: 'stopped', version: { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'Long, stop 1 %.', universe: ['BTC-USD'], dataSources: ['venue'], candleInterval: '1m', rules } } })).body.data;
    const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'main' })).body.data;
    const runtimeId = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id))).body.data.id;
    await h.settle();

    // The entry, then on the next tick its stop rests at the exchange: the position's size, its level on the tick.
    await h.nextMinute();
    const [entry] = await executionsOf(runtimeId);
    expect(entry).toMatchObject({ status: 'completed', order: { side: 'buy', status: 'filled', stopLoss: 49_500, takeProfit: 52_500 } });
    await h.nextMinute();
    expect(resting()).toMatchObject([{ type: 'STOP_LOSS', side: 'SELL', status: 'NEW', qty: entry!.order.size, stopPrice: '49500.00000000' }]);
    const stop = resting()[0]!;
    expect(stop.clientOrderId).toMatch(/^sl-[0-9a-f]{32}$/);
    expect((await bookOf(runtimeId)).resting).toEqual([{ symbol: 'BTC-USD', kind: 'stop_loss', side: 'sell', size: entry!.order.size, triggerPrice: '49500', clientOrderId: stop.clientOrderId }]);
    // The take-profit stays ours: a spot exchange locks the BTC for the stop, and would refuse a second sell of it.
    expect(binance.locked.BTC).toBeCloseTo(Number(entry!.order.size), 9);

    // The exchange lost it (cancelled outside us): the next tick rests it again, under the same id.
    Object.assign(stop, { status: 'CANCELED' });
    binance.locked.BTC = 0;
    await h.nextMinute();
    expect(resting().map((o) => [o.clientOrderId, o.status])).toEqual([
      [stop.clientOrderId, 'CANCELED'],
      [stop.clientOrderId, 'NEW'],
    ]);

    // Our outage: no tick runs while the price falls through the stop; the exchange fills it.
    binance.price = 49_000;
    expect((await fetch(`${binance.url}/api/v3/time`)).status).toBe(200);
    expect(resting().at(-1)).toMatchObject({ status: 'FILLED', price: '48995.00' });
    const before = binance.orders.length;
    // Back: the tick books that fill as the position's exit (its first leg), sends no sell of its own, and the
    // strategy, flat again, enters anew.
    await h.nextMinute();
    const legs = (await executionsOf(runtimeId)).slice(-2);
    expect(legs[0]).toMatchObject({ leg: 0, status: 'completed', decision: { kind: 'exit', reason: 'stop_loss', resting: stop.clientOrderId }, order: { side: 'sell', status: 'filled', price: 48_995 } });
    expect(Number(legs[0]!.order.size)).toBe(Number(entry!.order.size));
    expect(legs[1]).toMatchObject({ leg: 1, order: { side: 'buy', status: 'filled' } });
    expect(binance.orders.slice(before).map((o) => [o.type, o.side])).toEqual([['MARKET', 'BUY']]);
    const trades = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades`, token)).body.data;
    expect(trades[0]).toMatchObject({ status: 'closed', exitReason: 'stop_loss', exitPrice: 48_995 });

    // The new position's stop rests on the next tick; our flatten cancels it before its market sell (the locked BTC
    // would refuse the sell), and nothing rests once the position is gone.
    await h.nextMinute();
    const second = resting().at(-1)!;
    expect(second).toMatchObject({ type: 'STOP_LOSS', status: 'NEW', stopPrice: '48510.00000000' });
    const flattened = await h.call('POST', `/agentic-trading/runtimes/${runtimeId}/flatten`, token, {});
    expect(flattened).toMatchObject({ status: 200, body: { data: { executions: [{ status: 'completed', order: { side: 'sell', status: 'filled' } }], runtime: { book: { positions: [] } } } } });
    expect(second.status).toBe('CANCELED');
    expect((await bookOf(runtimeId)).resting).toBeUndefined();
    expect(binance.locked.BTC).toBeCloseTo(0, 9);
    expect((await h.call('PATCH', `/agentic-trading/runtimes/${runtimeId}/status`, token, { status: 'paused' })).status).toBe(200);
  });
});
