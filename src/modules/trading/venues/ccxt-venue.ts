// A live venue over ccxt: any exchange ccxt speaks, chosen by configuration (exchange id, keys, sandbox), with
// market orders (and immediate-or-cancel limit orders) placed under the execution's id as client order id and
// looked up by it before any second try; each symbol's lot, tick and minimum notional read from its markets; its
// ticker, candles and order book are the venue's own prices (VenuePrices: the `venue` data source and the quote
// each order is re-checked at). ccxt is loaded only when this venue is configured (it is large).
import type { Fill } from '../engine/book.js';
import { CANDLE_INTERVALS, lastClosedStart, type Candle } from '../data/market-data.js';
import { DEFAULT_MARKET_RULES, dec, text, ZERO, type MarketRules } from '../engine/money.js';
import { OrderRejected, OrderUnfilled, type OrderRequest, type Quote, type RestingOrder, type RestingOrders, type RestingState, type Venue, type VenuePrices } from './venue.js';

export interface CcxtVenueConfig {
  /** A ccxt exchange id (binance, kraken, coinbase, …). */
  exchange: string;
  apiKey: string;
  secret: string;
  /** The exchange's test network (ccxt's sandbox mode). */
  sandbox: boolean;
  /** Sends every request to this origin instead of the exchange's (a proxy, or a stand-in in tests). */
  apiUrl: string | null;
  /** Our symbols to the exchange's (BTC-USD → BTC/USDT); unmapped, BTC-USD is BTC/USD. */
  symbols: Record<string, string>;
  /** Each exchange call gives up after this (keep it well inside the placement lease, engine/placement.ts). */
  timeoutMs: number;
}

// The ccxt exchange instance's unified calls this venue uses (typed here: ccxt's own types are the whole library).
interface Exchange {
  urls: { api: unknown };
  timeout: number;
  setSandboxMode(on: boolean): void;
  precisionMode: number;
  markets: Record<string, CcxtMarket | undefined>;
  loadMarkets(): Promise<unknown>;
  createOrder(symbol: string, type: 'market' | 'limit', side: 'buy' | 'sell', amount: number, price?: number, params?: Record<string, unknown>): Promise<CcxtOrder>;
  cancelOrder(id: string | undefined, symbol: string, params?: Record<string, unknown>): Promise<CcxtOrder>;
  fetchOrder(id: string | undefined, symbol: string, params?: Record<string, unknown>): Promise<CcxtOrder>;
  amountToPrecision(symbol: string, amount: number): string;
  fetchTicker(symbol: string): Promise<{ last?: number; close?: number; timestamp?: number }>;
  fetchOHLCV(symbol: string, timeframe: string, since: number, limit: number): Promise<number[][]>;
  fetchOrderBook(symbol: string): Promise<{ bids: number[][]; asks: number[][] }>;
}

interface CcxtMarket {
  precision: { amount?: number; price?: number };
  limits: { cost?: { min?: number } };
}

interface CcxtOrder {
  status?: string;
  type?: string;
  side?: 'buy' | 'sell';
  filled?: number;
  average?: number;
  price?: number;
  cost?: number;
  fee?: { cost?: number; currency?: string };
  fees?: Array<{ cost?: number; currency?: string }>;
}

export class CcxtVenue implements Venue, VenuePrices {
  readonly live = true;
  readonly name: string;
  /** The exchange's own ticker, candles and order book (below). */
  readonly prices: VenuePrices = this;
  /**
   * Protective orders resting at the exchange through ccxt's unified createOrder (`stopLossPrice`: Binance spot's
   * STOP_LOSS, a market order once the last price reaches it). The stop-loss only: a spot exchange locks the asset an
   * open sell order holds, so a position's take-profit beside it would be refused (ccxt's unified API has no OCO);
   * the take-profit stays ours, checked each tick.
   */
  readonly resting: RestingOrders = {
    kinds: ['stop_loss'],
    rest: (order) => this.rest(order),
    state: (order) => this.restingState(order),
    cancel: (order) => this.cancelResting(order),
  };
  #exchange: Promise<{ exchange: Exchange; errors: CcxtErrors; constants: CcxtConstants }> | null = null;

  constructor(private readonly config: CcxtVenueConfig) {
    this.name = `ccxt:${config.exchange}${config.sandbox ? ':sandbox' : ''}`;
  }

  async place(order: OrderRequest): Promise<Fill> {
    const { exchange, errors } = await this.connect();
    const symbol = this.symbolOf(order.symbol);
    let placed: CcxtOrder;
    try {
      const amount = Number(exchange.amountToPrecision(symbol, Number(order.size)));
      const params = { clientOrderId: order.clientOrderId };
      placed =
        order.limitPrice === undefined
          ? await exchange.createOrder(symbol, 'market', order.side, amount, undefined, params)
          : await exchange.createOrder(symbol, 'limit', order.side, amount, Number(order.limitPrice), { ...params, timeInForce: 'IOC' });
    } catch (error) {
      // A client order id the exchange already holds: that order is ours, and the next try looks it up.
      if (error instanceof errors.DuplicateOrderId || error instanceof errors.OrderNotFound) throw error;
      // The exchange refused the order (funds, size, symbol, rules): definitive, nothing was filled.
      if (error instanceof errors.InvalidOrder || error instanceof errors.InsufficientFunds || error instanceof errors.BadSymbol || error instanceof errors.PermissionDenied) {
        throw new OrderRejected(error.message);
      }
      throw error;
    }
    return this.fillOf(order.symbol, order.side, { ...placed, type: order.limitPrice === undefined ? 'market' : 'limit' });
  }

  async findOrder({ clientOrderId, symbol }: { clientOrderId: string; symbol: string }): Promise<Fill | null> {
    const { exchange, errors } = await this.connect();
    let found: CcxtOrder;
    try {
      found = await exchange.fetchOrder(undefined, this.symbolOf(symbol), { clientOrderId });
    } catch (error) {
      if (error instanceof errors.OrderNotFound) return null;
      throw error;
    }
    return this.fillOf(symbol, found.side ?? 'buy', found);
  }

  private async rest(order: RestingOrder): Promise<void> {
    const { exchange, errors } = await this.connect();
    const symbol = this.symbolOf(order.symbol);
    const amount = Number(exchange.amountToPrecision(symbol, Number(order.size)));
    const level = order.kind === 'stop_loss' ? { stopLossPrice: Number(order.triggerPrice) } : { takeProfitPrice: Number(order.triggerPrice) };
    try {
      await exchange.createOrder(symbol, 'market', order.side, amount, undefined, { clientOrderId: order.clientOrderId, ...level });
    } catch (error) {
      // Its id already resting (a racing tick rested it first): that order is the one wanted.
      if (!(error instanceof errors.InvalidOrder || error instanceof errors.DuplicateOrderId)) throw error;
      if ((await this.restingState(order)).state !== 'open') throw error;
    }
  }

  private async restingState(order: Pick<RestingOrder, 'clientOrderId' | 'symbol' | 'side'>): Promise<RestingState> {
    const { exchange, errors } = await this.connect();
    let found: CcxtOrder;
    try {
      found = await exchange.fetchOrder(undefined, this.symbolOf(order.symbol), { clientOrderId: order.clientOrderId });
    } catch (error) {
      if (error instanceof errors.OrderNotFound) return { state: 'gone' };
      throw error;
    }
    if (found.status === 'open') return { state: 'open' };
    if (!found.filled) return { state: 'gone' };
    // Closed, or cancelled after part of it filled: what filled is booked.
    return { state: 'filled', fill: this.fillOf(order.symbol, order.side, { ...found, status: 'closed' }) };
  }

  private async cancelResting(order: Pick<RestingOrder, 'clientOrderId' | 'symbol' | 'side'>): Promise<RestingState> {
    const { exchange, errors } = await this.connect();
    try {
      await exchange.cancelOrder(undefined, this.symbolOf(order.symbol), { origClientOrderId: order.clientOrderId });
    } catch (error) {
      // Not open any more (filled, cancelled, never there): where it stands is asked below.
      if (!(error instanceof errors.OrderNotFound || error instanceof errors.InvalidOrder || error instanceof errors.OperationRejected)) throw error;
    }
    const after = await this.restingState(order);
    if (after.state === 'open') throw new Error(`the ${this.name} resting order ${order.clientOrderId} is still open after its cancel`);
    return after;
  }

  /**
   * What the order filled. Closed: its fill. Canceled, expired or rejected: what filled before that (a partial
   * fill), or when nothing did, a rejection (a market order) or unfilled (an immediate-or-cancel limit order
   * that found no price within its limit). Still open: throws, and the tick is retried (asking by client id).
   */
  private fillOf(symbol: string, side: 'buy' | 'sell', order: CcxtOrder): Fill {
    const filled = order.filled ?? 0;
    const price = order.average ?? (order.cost && filled ? order.cost / filled : order.price);
    const ended = order.status === 'canceled' || order.status === 'expired' || order.status === 'rejected';
    if (ended && !filled && order.type === 'limit' && order.status !== 'rejected') throw new OrderUnfilled(`the ${this.name} limit order ended ${order.status} with nothing filled within its price`);
    if (ended && !filled) throw new OrderRejected(`the ${this.name} order ended ${order.status} with nothing filled`);
    if ((order.status !== 'closed' && !ended) || !filled || !price) throw new Error(`the ${this.name} order is ${order.status ?? 'in an unknown state'}, not filled yet`);
    // Fees as the exchange reports them (a lookup by client id may carry none): ccxt lists them all in `fees`
    // (with `fee` a copy of one of them), else gives `fee` alone. In the quote currency they are the fill's fee;
    // in the base currency they came out of the amount bought: the book holds the rest, and the fee is that
    // amount at the fill's price (the cash paid for the whole amount). Fees in a third currency (an exchange
    // token) are not USD and are left out.
    const [base, quote] = this.symbolOf(symbol).split('/') as [string, string];
    const fees = order.fees?.length ? order.fees : order.fee ? [order.fee] : [];
    const paidIn = (currency: string) => fees.filter((fee) => fee.currency === currency).reduce((sum, fee) => sum.plus(fee.cost ?? 0), ZERO);
    const buy = (order.side ?? side) === 'buy';
    const inBase = buy ? paidIn(base) : ZERO;
    // ccxt answers numbers: an average over several fills is a quotient, kept to 12 decimals like the book's.
    const fillPrice = dec(price).toDecimalPlaces(12);
    return { symbol, side: order.side ?? side, size: text(dec(filled).minus(inBase)), price: text(fillPrice), feeUsd: text(paidIn(quote).plus(inBase.times(fillPrice))) };
  }

  /**
   * The symbol's rules from the exchange's markets: lot and tick from its precision (a step, or a count of
   * decimals in ccxt's DECIMAL_PLACES mode), the minimum notional from its cost limit; what it leaves out
   * falls back to DEFAULT_MARKET_RULES.
   */
  async market(symbol: string): Promise<MarketRules> {
    const { exchange, constants } = await this.connect();
    const market = exchange.markets[this.symbolOf(symbol)];
    if (!market) throw new Error(`${this.name} has no market ${this.symbolOf(symbol)}`);
    const step = (precision: number | undefined, fallback: string) =>
      precision === undefined ? fallback : exchange.precisionMode === constants.DECIMAL_PLACES ? text(dec(10).pow(-precision)) : exchange.precisionMode === constants.TICK_SIZE ? text(dec(precision)) : fallback;
    const minCost = market.limits.cost?.min;
    return {
      lotSize: step(market.precision.amount, DEFAULT_MARKET_RULES.lotSize),
      tickSize: step(market.precision.price, DEFAULT_MARKET_RULES.tickSize),
      minNotionalUsd: minCost === undefined ? DEFAULT_MARKET_RULES.minNotionalUsd : text(dec(minCost)),
    };
  }

  async supports(symbol: string): Promise<boolean> {
    const { exchange } = await this.connect();
    return exchange.markets[this.symbolOf(symbol)] !== undefined;
  }

  /** The last traded price and the exchange's time for it (an exchange whose ticker carries no time: when it answered). */
  async ticker(symbol: string): Promise<{ price: string; at: Date }> {
    const { exchange } = await this.connect();
    const ticker = await exchange.fetchTicker(this.symbolOf(symbol));
    const price = ticker.last ?? ticker.close;
    if (price === undefined || !(price > 0)) throw new Error(`${this.name} answered no last price for ${this.symbolOf(symbol)}`);
    return { price: text(dec(price)), at: new Date(ticker.timestamp ?? Date.now()) };
  }

  /** The exchange's candles (OHLCV) of the interval: the `count` closed at `at`, asked from the first one's start. */
  async candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]> {
    const { exchange } = await this.connect();
    const timeframe = Object.entries(CANDLE_INTERVALS).find(([, minutes]) => minutes === intervalMinutes)?.[0];
    if (!timeframe) throw new Error(`no candle interval of ${intervalMinutes} minutes`);
    const lastStart = lastClosedStart(at, intervalMinutes) * 60_000;
    const since = lastStart - (count - 1) * intervalMinutes * 60_000;
    const rows = await exchange.fetchOHLCV(this.symbolOf(symbol), timeframe, since, count);
    return rows.filter(([start]) => start! >= since && start! <= lastStart).map(([start, open, high, low, close]) => ({ start: new Date(start!).toISOString(), open: open!, high: high!, low: low!, close: close! }));
  }

  /** The best bid and ask of the exchange's order book, read now. */
  async quote(symbol: string): Promise<Quote> {
    const { exchange } = await this.connect();
    const book = await exchange.fetchOrderBook(this.symbolOf(symbol));
    const [bid, ask] = [book.bids[0]?.[0], book.asks[0]?.[0]];
    if (!bid || !ask) throw new Error(`${this.name} has no ${bid ? 'ask' : 'bid'} in the ${this.symbolOf(symbol)} order book`);
    return { bid: text(dec(bid)), ask: text(dec(ask)) };
  }

  private symbolOf(symbol: string): string {
    return this.config.symbols[symbol] ?? symbol.replace('-', '/');
  }

  private connect(): Promise<{ exchange: Exchange; errors: CcxtErrors; constants: CcxtConstants }> {
    this.#exchange ??= (async () => {
      const ccxt = ((await import('ccxt')) as unknown as { default: CcxtModule }).default;
      const Exchange = ccxt[this.config.exchange as keyof CcxtModule] as unknown as (new (options: Record<string, unknown>) => Exchange) | undefined;
      if (typeof Exchange !== 'function') throw new Error(`ccxt has no exchange ${this.config.exchange}`);
      const exchange = new Exchange({ apiKey: this.config.apiKey, secret: this.config.secret, enableRateLimit: true, timeout: this.config.timeoutMs, options: { defaultType: 'spot', fetchMarkets: { types: ['spot'] } } });
      if (this.config.sandbox) exchange.setSandboxMode(true);
      if (this.config.apiUrl) exchange.urls.api = rebased(exchange.urls.api, this.config.apiUrl);
      await exchange.loadMarkets();
      return { exchange, errors: ccxt as unknown as CcxtErrors, constants: ccxt as unknown as CcxtConstants };
    })().catch((error: unknown) => {
      this.#exchange = null; // a failed connection is tried again by the next order
      throw error;
    });
    return this.#exchange;
  }
}

type ErrorClass = new (...args: never[]) => Error;
interface CcxtErrors {
  DuplicateOrderId: ErrorClass;
  InvalidOrder: ErrorClass;
  InsufficientFunds: ErrorClass;
  BadSymbol: ErrorClass;
  PermissionDenied: ErrorClass;
  OrderNotFound: ErrorClass;
  OperationRejected: ErrorClass;
}
/** ccxt's precision modes: a market's precision is a step (TICK_SIZE) or a count of decimals (DECIMAL_PLACES). */
interface CcxtConstants {
  TICK_SIZE: number;
  DECIMAL_PLACES: number;
}
type CcxtModule = CcxtErrors & Record<string, unknown>;

/** Every API URL of the exchange moved to `origin`, its path kept. */
function rebased(urls: unknown, origin: string): unknown {
  if (typeof urls === 'string') return `${origin.replace(/\/$/, '')}${new URL(urls).pathname}`;
  if (urls && typeof urls === 'object') return Object.fromEntries(Object.entries(urls).map(([key, value]) => [key, rebased(value, origin)]));
  return urls;
}
