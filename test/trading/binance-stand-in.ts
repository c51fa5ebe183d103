// A stand-in of Binance's spot REST API, the subset a venue adapter needs, over real HTTP with Binance's own
// request signing (HMAC-SHA256 of the parameters with the secret, the key in X-MBX-APIKEY) and error shapes:
// exchangeInfo (BTCUSDT's lot, tick and minimum notional filters), placing a market order or an
// immediate-or-cancel limit order (POST /api/v3/order: it fills at the price if that is within its limit, else
// expires with nothing filled), an order by client order id (GET
// /api/v3/order?origClientOrderId=) and balances (GET /api/v3/account), and its market data: the 24-hour ticker
// (GET /api/v3/ticker/24hr: the last price, stamped with the stand-in's time), the order book (GET
// /api/v3/depth: one bid and one ask `halfSpread` either side of the price) and candles (GET /api/v3/klines: a
// steady rise into the price, one step of `trendBps` per candle). As at Binance, a client order id is unique only
// among open orders: a market order fills at once, so the same id placed again is a new order. A market order
// fills at the touch (a buy at the ask, a sell at the bid). Protective orders rest: STOP_LOSS and TAKE_PROFIT (a
// `stopPrice`, no price: a market order once the price reaches it) answer NEW, hold the asset (or the quote asset)
// they would sell (buy) as `locked`, so an order needing what they hold is refused as at Binance, and fill at the
// touch once the price reaches their stopPrice, seen at the next request (triggered even while no one asks about
// them: any request, a price read or another order, finds them filled); DELETE /api/v3/order cancels an open one
// by origClientOrderId (else -2011 Unknown order sent.), and the order query answers them NEW, FILLED or CANCELED.
// Knobs: the price, the balances, `loseNextAnswer` (places the order, then drops the connection),
// `rejectNext` (answers Binance's insufficient-balance error), `expireNext` (a market order that found no
// liquidity: EXPIRED, nothing filled), `commissionAsset` (Binance takes a buy's fee in the asset bought
// unless BNB pays it), `moveAfterTicker` (the next ticker answered, the price moves to this: between a tick's
// decision and its order), `tickerAgeMs` (the ticker stamped that long ago) and `now` (the stand-in's clock).
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInOrder {
  orderId: number;
  clientOrderId: string;
  symbol: string;
  side: 'BUY' | 'SELL';
  qty: string;
  price: string;
  commission: string;
  commissionAsset: string;
  status: 'FILLED' | 'EXPIRED' | 'NEW' | 'CANCELED';
  type: 'MARKET' | 'LIMIT' | 'STOP_LOSS' | 'TAKE_PROFIT';
  /** A resting order's trigger ('0.00000000' for others, as Binance writes it). */
  stopPrice: string;
  /** A limit order's price ('0.00000000' for a market order, as Binance writes it). */
  limitPrice: string;
  time: number;
}

export interface BinanceStandIn {
  url: string;
  orders: StandInOrder[];
  price: number;
  balances: Record<string, number>;
  /** What open resting orders hold, by asset. */
  locked: Record<string, number>;
  loseNextAnswer: boolean;
  rejectNext: boolean;
  expireNext: boolean;
  commissionAsset: 'USDT' | 'BTC';
  /** The best bid and ask are this far below and above the price. */
  halfSpread: number;
  /** After the next ticker it answers, the price becomes this (null: it stays). */
  moveAfterTicker: number | null;
  tickerAgeMs: number;
  /** Each candle closes this many basis points above the one before (the last at the price). */
  trendBps: number;
  now: () => number;
  /** Market-data requests answered, by path. */
  reads: Record<string, number>;
  /** Requests refused for their signature or key. */
  refused: number;
  close(): Promise<void>;
}

const COMMISSION_RATE = 0.001;

export async function startBinanceStandIn(apiKey: string, secret: string): Promise<BinanceStandIn> {
  const state: BinanceStandIn = {
    url: '',
    orders: [],
    price: 50_000,
    balances: { USDT: 1_000_000, BTC: 100 },
    locked: {},
    loseNextAnswer: false,
    rejectNext: false,
    expireNext: false,
    commissionAsset: 'USDT',
    halfSpread: 0,
    moveAfterTicker: null,
    tickerAgeMs: 0,
    trendBps: 10,
    now: () => Date.now(),
    reads: {},
    refused: 0,
    close: async () => {},
  };
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const url = new URL(request.url!, 'http://stand-in');
    // Binance takes the parameters in the query string or, for a POST, in the form body.
    const body = Buffer.concat(chunks).toString();
    const raw = body || url.search.slice(1);
    const params = new URLSearchParams(raw);
    const send = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const error = (status: number, code: number, msg: string) => send(status, { code, msg });
    // The exchange moved on since the last request: resting orders the price reached have filled.
    triggerResting(state);

    if (request.method === 'GET' && url.pathname === '/api/v3/exchangeInfo') return send(200, exchangeInfo());
    if (request.method === 'GET' && url.pathname === '/api/v3/time') return send(200, { serverTime: Date.now() });
    if (request.method === 'GET' && ['/api/v3/ticker/24hr', '/api/v3/depth', '/api/v3/klines'].includes(url.pathname)) {
      state.reads[url.pathname] = (state.reads[url.pathname] ?? 0) + 1;
      if (params.get('symbol') !== 'BTCUSDT') return error(400, -1121, 'Invalid symbol.');
      if (url.pathname === '/api/v3/ticker/24hr') {
        const answer = ticker24hr(state);
        if (state.moveAfterTicker !== null) [state.price, state.moveAfterTicker] = [state.moveAfterTicker, null];
        return send(200, answer);
      }
      if (url.pathname === '/api/v3/depth') return send(200, { lastUpdateId: 1, bids: [[(state.price - state.halfSpread).toFixed(2), '5.00000000']], asks: [[(state.price + state.halfSpread).toFixed(2), '5.00000000']] });
      return send(200, klines(state, params.get('interval')!, Number(params.get('startTime')), Number(params.get('limit') ?? 500)));
    }
    // Everything else is signed: the key in the header, the HMAC of the parameters before `signature`.
    const signature = params.get('signature');
    const signed = raw.replace(/&?signature=[0-9a-f]+$/, '');
    if (request.headers['x-mbx-apikey'] !== apiKey) return (state.refused++, error(401, -2015, 'Invalid API-key, IP, or permissions for action.'));
    if (!signature || createHmac('sha256', secret).update(signed).digest('hex') !== signature) return (state.refused++, error(400, -1022, 'Signature for this request is not valid.'));

    if (request.method === 'GET' && url.pathname === '/api/v3/account') {
      return send(200, { makerCommission: 10, takerCommission: 10, canTrade: true, accountType: 'SPOT', balances: Object.entries(state.balances).map(([asset]) => ({ asset, free: free(state, asset).toFixed(8), locked: (state.locked[asset] ?? 0).toFixed(8) })), permissions: ['SPOT'] });
    }
    if (request.method === 'GET' && url.pathname === '/api/v3/order') {
      const id = params.get('origClientOrderId');
      const order = [...state.orders].reverse().find((o) => o.clientOrderId === id);
      if (!order) return error(400, -2013, 'Order does not exist.');
      return send(200, { ...orderJson(order), time: order.time, updateTime: order.time, isWorking: true, icebergQty: '0.00000000', origQuoteOrderQty: '0.00000000' });
    }
    if (request.method === 'DELETE' && url.pathname === '/api/v3/order') {
      const id = params.get('origClientOrderId');
      const order = [...state.orders].reverse().find((o) => o.clientOrderId === id && o.status === 'NEW');
      if (!order) return error(400, -2011, 'Unknown order sent.');
      order.status = 'CANCELED';
      unlock(state, order);
      return send(200, { ...orderJson(order), origClientOrderId: id, transactTime: Date.now() });
    }
    if (request.method === 'POST' && url.pathname === '/api/v3/order') {
      const [symbol, side, type, quantity, clientOrderId] = [params.get('symbol'), params.get('side'), params.get('type'), params.get('quantity'), params.get('newClientOrderId')];
      if (symbol !== 'BTCUSDT' || !['MARKET', 'LIMIT', 'STOP_LOSS', 'TAKE_PROFIT'].includes(type!) || (side !== 'BUY' && side !== 'SELL') || !quantity || !clientOrderId) return error(400, -1102, 'Mandatory parameter was not sent, was empty/null, or malformed.');
      if (type === 'STOP_LOSS' || type === 'TAKE_PROFIT') {
        const stopPrice = Number(params.get('stopPrice'));
        if (!stopPrice) return error(400, -1102, "Mandatory parameter 'stopPrice' was not sent, was empty/null, or malformed.");
        if (state.orders.some((o) => o.clientOrderId === clientOrderId && o.status === 'NEW')) return error(400, -2010, 'Duplicate order sent.');
        const qty = Number(quantity);
        const [asset, amount] = side === 'SELL' ? ['BTC', qty] : ['USDT', qty * stopPrice];
        if (amount > free(state, asset)) return error(400, -2010, 'Account has insufficient balance for requested action.');
        state.locked[asset] = (state.locked[asset] ?? 0) + amount;
        const order: StandInOrder = { orderId: state.orders.length + 1, clientOrderId, symbol, side, qty: qty.toFixed(5), price: '0.00', commission: '0', commissionAsset: 'USDT', status: 'NEW', type, limitPrice: (0).toFixed(8), stopPrice: stopPrice.toFixed(8), time: Date.now() };
        state.orders.push(order);
        return send(200, { ...orderJson(order), transactTime: order.time, workingTime: -1, fills: [] });
      }
      const limit = type === 'LIMIT' ? Number(params.get('price')) : null;
      if (type === 'LIMIT' && (params.get('timeInForce') !== 'IOC' || !limit)) return error(400, -1102, "Mandatory parameter 'timeInForce' or 'price' was not sent, was empty/null, or malformed.");
      const qty = Number(quantity);
      const fillPrice = side === 'BUY' ? state.price + state.halfSpread : state.price - state.halfSpread;
      const cost = qty * fillPrice;
      if (state.rejectNext || (side === 'BUY' ? cost > free(state, 'USDT') : qty > free(state, 'BTC'))) {
        state.rejectNext = false;
        return error(400, -2010, 'Account has insufficient balance for requested action.');
      }
      const outsideLimit = limit !== null && (side === 'BUY' ? fillPrice > limit : fillPrice < limit);
      const expired = state.expireNext || outsideLimit;
      state.expireNext = false;
      const inBase = state.commissionAsset === 'BTC' && side === 'BUY';
      const commission = inBase ? qty * COMMISSION_RATE : cost * COMMISSION_RATE;
      if (!expired) {
        state.balances.USDT! += (side === 'BUY' ? -cost : cost) - (inBase ? 0 : commission);
        state.balances.BTC! += (side === 'BUY' ? qty : -qty) - (inBase ? commission : 0);
      }
      const order: StandInOrder = {
        orderId: state.orders.length + 1,
        clientOrderId,
        symbol,
        side,
        qty: qty.toFixed(5),
        price: fillPrice.toFixed(2),
        commission: expired ? '0' : commission.toFixed(8),
        commissionAsset: inBase ? 'BTC' : 'USDT',
        status: expired ? 'EXPIRED' : 'FILLED',
        type: type as 'MARKET' | 'LIMIT',
        limitPrice: (limit ?? 0).toFixed(8),
        stopPrice: (0).toFixed(8),
        time: Date.now(),
      };
      state.orders.push(order);
      if (state.loseNextAnswer) {
        state.loseNextAnswer = false;
        return response.destroy();
      }
      const fills = order.status === 'FILLED' ? [{ price: order.price, qty: order.qty, commission: order.commission, commissionAsset: order.commissionAsset, tradeId: order.orderId }] : [];
      return send(200, { ...orderJson(order), transactTime: order.time, workingTime: order.time, fills });
    }
    return error(404, -1, `no route ${request.method} ${url.pathname}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => server.close(() => resolve()));
  return state;
}

const free = (state: BinanceStandIn, asset: string) => state.balances[asset]! - (state.locked[asset] ?? 0);

function unlock(state: BinanceStandIn, order: StandInOrder): void {
  const [asset, amount] = order.side === 'SELL' ? ['BTC', Number(order.qty)] : ['USDT', Number(order.qty) * Number(order.stopPrice)];
  state.locked[asset] = (state.locked[asset] ?? 0) - amount;
}

/** Each open STOP_LOSS or TAKE_PROFIT the price reached fills whole at the touch, with the commission in the quote asset. */
function triggerResting(state: BinanceStandIn): void {
  for (const order of state.orders) {
    if (order.status !== 'NEW') continue;
    const stop = Number(order.stopPrice);
    const sell = order.side === 'SELL';
    // A sell's stop-loss at or under its stop, its take-profit at or over it; a buy's the other way.
    const reached = (order.type === 'STOP_LOSS') === sell ? state.price <= stop : state.price >= stop;
    if (!reached) continue;
    unlock(state, order);
    const qty = Number(order.qty);
    const price = sell ? state.price - state.halfSpread : state.price + state.halfSpread;
    const commission = qty * price * COMMISSION_RATE;
    state.balances.USDT! += (sell ? qty * price : -qty * price) - commission;
    state.balances.BTC! += sell ? -qty : qty;
    Object.assign(order, { status: 'FILLED', price: price.toFixed(2), commission: commission.toFixed(8), commissionAsset: 'USDT' });
  }
}

const MINUTES: Record<string, number> = { '1m': 1, '5m': 5, '15m': 15, '30m': 30, '1h': 60, '4h': 240, '1d': 1440 };

function ticker24hr(state: BinanceStandIn) {
  const closeTime = state.now() - state.tickerAgeMs;
  const [last, bid, ask] = [state.price, state.price - state.halfSpread, state.price + state.halfSpread].map((p) => p.toFixed(2));
  return {
    symbol: 'BTCUSDT',
    priceChange: '0.00000000',
    priceChangePercent: '0.000',
    weightedAvgPrice: last,
    prevClosePrice: last,
    lastPrice: last,
    lastQty: '0.01000000',
    bidPrice: bid,
    bidQty: '5.00000000',
    askPrice: ask,
    askQty: '5.00000000',
    openPrice: last,
    highPrice: last,
    lowPrice: last,
    volume: '1000.00000000',
    quoteVolume: '0.00000000',
    openTime: closeTime - 86_400_000,
    closeTime,
    firstId: 1,
    lastId: 2,
    count: 2,
  };
}

/** Candles of the interval from `startTime`, `limit` at most, only those closed by the stand-in's now: a rise of trendBps a candle into the price. */
function klines(state: BinanceStandIn, interval: string, startTime: number, limit: number) {
  const ms = MINUTES[interval]! * 60_000;
  const lastStart = Math.floor(state.now() / ms) * ms - ms;
  const rows = [];
  for (let start = Math.ceil(startTime / ms) * ms; start <= lastStart && rows.length < limit; start += ms) {
    const close = state.price * (1 - (state.trendBps / 10_000) * ((lastStart - start) / ms));
    const open = close * (1 - state.trendBps / 20_000);
    rows.push([start, open.toFixed(2), close.toFixed(2), open.toFixed(2), close.toFixed(2), '10.00000000', start + ms - 1, '0', 10, '5.00000000', '0', '0']);
  }
  return rows;
}

function orderJson(order: StandInOrder) {
  const executed = order.status === 'FILLED' ? order.qty : '0.00000';
  const resting = order.type === 'STOP_LOSS' || order.type === 'TAKE_PROFIT';
  const quote = (Number(executed) * Number(order.price)).toFixed(8);
  return {
    symbol: order.symbol,
    orderId: order.orderId,
    orderListId: -1,
    clientOrderId: order.clientOrderId,
    price: order.limitPrice,
    origQty: order.qty,
    executedQty: executed,
    cummulativeQuoteQty: quote,
    status: order.status,
    timeInForce: order.type === 'LIMIT' ? 'IOC' : 'GTC',
    type: order.type,
    side: order.side,
    stopPrice: resting ? order.stopPrice : '0.00000000',
    selfTradePreventionMode: 'NONE',
  };
}

function exchangeInfo() {
  return {
    timezone: 'UTC',
    serverTime: Date.now(),
    rateLimits: [],
    exchangeFilters: [],
    symbols: [
      {
        symbol: 'BTCUSDT',
        status: 'TRADING',
        baseAsset: 'BTC',
        baseAssetPrecision: 8,
        quoteAsset: 'USDT',
        quotePrecision: 8,
        quoteAssetPrecision: 8,
        baseCommissionPrecision: 8,
        quoteCommissionPrecision: 8,
        orderTypes: ['LIMIT', 'LIMIT_MAKER', 'MARKET', 'STOP_LOSS', 'STOP_LOSS_LIMIT', 'TAKE_PROFIT', 'TAKE_PROFIT_LIMIT'],
        icebergAllowed: true,
        ocoAllowed: true,
        isSpotTradingAllowed: true,
        isMarginTradingAllowed: false,
        filters: [
          { filterType: 'PRICE_FILTER', minPrice: '0.01000000', maxPrice: '1000000.00000000', tickSize: '0.01000000' },
          { filterType: 'LOT_SIZE', minQty: '0.00001000', maxQty: '9000.00000000', stepSize: '0.00001000' },
          { filterType: 'NOTIONAL', minNotional: '5.00000000', applyMinToMarket: true, maxNotional: '9000000.00000000', applyMaxToMarket: false, avgPriceMins: 5 },
        ],
        permissions: [],
        permissionSets: [['SPOT']],
        defaultSelfTradePreventionMode: 'EXPIRE_MAKER',
        allowedSelfTradePreventionModes: ['NONE', 'EXPIRE_MAKER'],
      },
    ],
  };
}
