// A stand-in of Binance's spot REST API, the subset a venue adapter needs, over real HTTP with Binance's own
// request signing (HMAC-SHA256 of the parameters with the secret, the key in X-MBX-APIKEY) and error shapes:
// exchangeInfo (BTCUSDT's lot, tick and minimum notional filters), placing a market order or an
// immediate-or-cancel limit order (POST /api/v3/order: it fills at the price if that is within its limit, else
// expires with nothing filled), an order by client order id (GET
// /api/v3/order?origClientOrderId=) and balances (GET /api/v3/account). As at Binance, a client order id is
// unique only among open orders: a market order fills at once, so the same id placed again is a new order.
// Knobs: the price, the balances, `loseNextAnswer` (places the order, then drops the connection),
// `rejectNext` (answers Binance's insufficient-balance error), `expireNext` (a market order that found no
// liquidity: EXPIRED, nothing filled) and `commissionAsset` (Binance takes a buy's fee in the asset bought
// unless BNB pays it).
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
  status: 'FILLED' | 'EXPIRED';
  type: 'MARKET' | 'LIMIT';
  /** A limit order's price ('0.00000000' for a market order, as Binance writes it). */
  limitPrice: string;
  time: number;
}

export interface BinanceStandIn {
  url: string;
  orders: StandInOrder[];
  price: number;
  balances: Record<string, number>;
  loseNextAnswer: boolean;
  rejectNext: boolean;
  expireNext: boolean;
  commissionAsset: 'USDT' | 'BTC';
  /** Requests refused for their signature or key. */
  refused: number;
  close(): Promise<void>;
}

const COMMISSION_RATE = 0.001;

export async function startBinanceStandIn(apiKey: string, secret: string): Promise<BinanceStandIn> {
  const state: BinanceStandIn = { url: '', orders: [], price: 50_000, balances: { USDT: 1_000_000, BTC: 100 }, loseNextAnswer: false, rejectNext: false, expireNext: false, commissionAsset: 'USDT', refused: 0, close: async () => {} };
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

    if (request.method === 'GET' && url.pathname === '/api/v3/exchangeInfo') return send(200, exchangeInfo());
    if (request.method === 'GET' && url.pathname === '/api/v3/time') return send(200, { serverTime: Date.now() });
    // Everything else is signed: the key in the header, the HMAC of the parameters before `signature`.
    const signature = params.get('signature');
    const signed = raw.replace(/&?signature=[0-9a-f]+$/, '');
    if (request.headers['x-mbx-apikey'] !== apiKey) return (state.refused++, error(401, -2015, 'Invalid API-key, IP, or permissions for action.'));
    if (!signature || createHmac('sha256', secret).update(signed).digest('hex') !== signature) return (state.refused++, error(400, -1022, 'Signature for this request is not valid.'));

    if (request.method === 'GET' && url.pathname === '/api/v3/account') {
      return send(200, { makerCommission: 10, takerCommission: 10, canTrade: true, accountType: 'SPOT', balances: Object.entries(state.balances).map(([asset, free]) => ({ asset, free: free.toFixed(8), locked: '0.00000000' })), permissions: ['SPOT'] });
    }
    if (request.method === 'GET' && url.pathname === '/api/v3/order') {
      const id = params.get('origClientOrderId');
      const order = [...state.orders].reverse().find((o) => o.clientOrderId === id);
      if (!order) return error(400, -2013, 'Order does not exist.');
      return send(200, { ...orderJson(order), time: order.time, updateTime: order.time, isWorking: true, stopPrice: '0.00000000', icebergQty: '0.00000000', origQuoteOrderQty: '0.00000000' });
    }
    if (request.method === 'POST' && url.pathname === '/api/v3/order') {
      const [symbol, side, type, quantity, clientOrderId] = [params.get('symbol'), params.get('side'), params.get('type'), params.get('quantity'), params.get('newClientOrderId')];
      if (symbol !== 'BTCUSDT' || (type !== 'MARKET' && type !== 'LIMIT') || (side !== 'BUY' && side !== 'SELL') || !quantity || !clientOrderId) return error(400, -1102, 'Mandatory parameter was not sent, was empty/null, or malformed.');
      const limit = type === 'LIMIT' ? Number(params.get('price')) : null;
      if (type === 'LIMIT' && (params.get('timeInForce') !== 'IOC' || !limit)) return error(400, -1102, "Mandatory parameter 'timeInForce' or 'price' was not sent, was empty/null, or malformed.");
      const qty = Number(quantity);
      const cost = qty * state.price;
      if (state.rejectNext || (side === 'BUY' ? cost > state.balances.USDT! : qty > state.balances.BTC!)) {
        state.rejectNext = false;
        return error(400, -2010, 'Account has insufficient balance for requested action.');
      }
      const outsideLimit = limit !== null && (side === 'BUY' ? state.price > limit : state.price < limit);
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
        price: state.price.toFixed(2),
        commission: expired ? '0' : commission.toFixed(8),
        commissionAsset: inBase ? 'BTC' : 'USDT',
        status: expired ? 'EXPIRED' : 'FILLED',
        type,
        limitPrice: (limit ?? 0).toFixed(8),
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

function orderJson(order: StandInOrder) {
  const executed = order.status === 'FILLED' ? order.qty : '0.00000';
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
        orderTypes: ['LIMIT', 'MARKET'],
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
