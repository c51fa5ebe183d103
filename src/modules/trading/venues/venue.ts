import type { Fill, RestingOrder } from '../engine/book.js';
import type { Candle } from '../data/market-data.js';
import { dec, DEFAULT_MARKET_RULES, feeUsd, text, toTick, type Dec, type MarketRules } from '../engine/money.js';

export type { RestingOrder } from '../engine/book.js';

export interface OrderRequest {
  symbol: string;
  side: 'buy' | 'sell';
  /** Units to trade: whole lots of the venue's lot size (market()). */
  size: string;
  /** The feed's price at the execution. */
  referencePrice: number;
  /** A limit order's price, on the venue's tick: it fills at this price or better, at once, or not at all. Unset: a market order. */
  limitPrice?: string;
  /**
   * A protective exit's: how the resting order it stands for fills (tick-types.ts ExitTrigger). The paper venue
   * fills a stop from `price` at the touch and a take-profit at `price` as maker; a live venue sends a market order.
   */
  trigger?: { kind: 'stop' | 'take_profit'; price: number };
  at: Date;
  /** Set for a live venue: the execution's id, so a repeat of the call places nothing new. */
  clientOrderId?: string;
}

/** The venue refused the order (a definitive answer: nothing was filled); its words in `message`. */
export class OrderRejected extends Error {
  override readonly name = 'OrderRejected';
}

/** A limit order the venue could not fill within its price at once (immediate-or-cancel): nothing filled, nothing wrong. */
export class OrderUnfilled extends Error {
  override readonly name = 'OrderUnfilled';
}

/** A venue's executable quote: its best bid (what a sell meets) and ask (what a buy meets), decimal text. */
export interface Quote {
  bid: string;
  ask: string;
}

/**
 * A live venue's own market data: what its runtimes decide on (the `venue` data source, venue-feed.ts, which
 * caches it and bounds its age) and what each order is re-checked at right before it is sent (quote-check.ts).
 */
export interface VenuePrices {
  /** Whether the venue lists the symbol. */
  supports(symbol: string): Promise<boolean>;
  /** The last traded price (decimal text) and when the venue reported it. */
  ticker(symbol: string): Promise<{ price: string; at: Date }>;
  /** The `count` most recent candles of `symbol` closed at `at`, oldest first (the venue's OHLCV). */
  candles(symbol: string, intervalMinutes: number, at: Date, count: number): Promise<Candle[]>;
  /** The best bid and ask now, read from the venue every time (never cached). */
  quote(symbol: string): Promise<Quote>;
}

/**
 * Where orders go. The paper venue fills at once at the feed's price; an adapter for a real venue
 * implements the same call (placing the order, waiting for its fill) and reports what was filled.
 */
export interface Venue {
  readonly name: string;
  /**
   * True when an order has effects outside the book (a real venue). A live venue's ticks claim the
   * order in the database before placing it, with the execution's id as `clientOrderId`; a tick whose
   * worker died (or lost the answer) after placing asks findOrder before it places again.
   */
  readonly live: boolean;
  /** Places the order and answers its fill; throws OrderRejected when the venue refuses it, OrderUnfilled when a limit order found no price. */
  place(order: OrderRequest): Promise<Fill>;
  /**
   * A live venue: the fill of the order placed with this client order id, or null when it holds none. Asked
   * before an order is placed again: real venues keep a client order id unique only among open orders,
   * so a filled order's id placed again is a second order.
   */
  findOrder(order: { clientOrderId: string; symbol: string }): Promise<Fill | null>;
  /** The symbol's lot size, tick size and minimum notional, which every order decided for this venue keeps to. */
  market(symbol: string): Promise<MarketRules>;
  /**
   * A live venue's own prices (required of one: docs/trading.md, "Live venues trade on their own prices"). Its
   * runtimes read them as the `venue` data source, and each order is re-checked at its quote before it is sent.
   */
  readonly prices?: VenuePrices;
  /** A live venue that holds protective orders for us (protective-orders.ts): they fill there even while we are down. */
  readonly resting?: RestingOrders;
}

/** Where a resting order stands at the venue: still resting, filled (its fill), or gone (cancelled, expired, never there). */
export type RestingState = { state: 'open' } | { state: 'filled'; fill: Fill } | { state: 'gone' };

/** The protective orders a live venue holds (ccxt: createOrder with stopLossPrice or takeProfitPrice). */
export interface RestingOrders {
  /**
   * The kinds it rests for one position at once. A spot exchange locks the asset an open sell order holds, so it
   * rests one order per position (the stop-loss: the loss is what must not wait for us); a take-profit stays ours.
   */
  readonly kinds: ReadonlyArray<RestingOrder['kind']>;
  /** Rests the order; an order of this client order id already resting is left as it is. */
  rest(order: RestingOrder): Promise<void>;
  state(order: Pick<RestingOrder, 'clientOrderId' | 'symbol' | 'side'>): Promise<RestingState>;
  /** Cancels it, and answers where it stands after (filled: it filled before the cancel reached it). */
  cancel(order: Pick<RestingOrder, 'clientOrderId' | 'symbol' | 'side'>): Promise<RestingState>;
}

/**
 * How the paper venue fills: its fees and slippage in basis points of the notional, and each symbol's rules.
 * The feed's price is the middle of the market; the touch (what a taker meets) is `slippageBps` away from it.
 */
export interface PaperVenueConfig {
  /** The fee of a resting limit order a later price reached (a take-profit): it fills at its price as maker. */
  makerFeeBps: number;
  /** The fee of an order that takes liquidity at the touch: a market order, or a limit order priced at or through it. */
  takerFeeBps: number;
  slippageBps: number;
  /** Rules by symbol (TRADING_PAPER_MARKETS); any other symbol trades by DEFAULT_MARKET_RULES. */
  markets: Record<string, MarketRules>;
}

/** The paper venue's defaults (docs/trading.md). */
export const PAPER_VENUE_DEFAULTS: PaperVenueConfig = { makerFeeBps: 2, takerFeeBps: 10, slippageBps: 5, markets: {} };

/**
 * Fills what is executable now, whole, as a live venue does. The touch is the reference price moved
 * `slippageBps` against the order, on the tick against it too. A market order, or a limit order priced at or
 * through the touch, takes it (taker fee); a limit order priced inside the spread is immediate-or-cancel, as a
 * live venue sends it: nothing meets it now, so it is cancelled with nothing filled (OrderUnfilled), never filled
 * as maker within the tick. A protective exit fills as the resting order it stands for: a stop from its trigger
 * price at the touch (taker), a take-profit at its trigger price (maker: a resting limit a later price reached).
 * The fee is the role's basis points of the notional, rounded up to the cent (a fee is never rounded away).
 */
export class PaperVenue implements Venue {
  readonly name = 'paper';
  readonly live = false;

  constructor(private readonly config: PaperVenueConfig = PAPER_VENUE_DEFAULTS) {}

  async place(order: OrderRequest): Promise<Fill> {
    const buy = order.side === 'buy';
    const { tickSize } = await this.market(order.symbol);
    const fillOf = (price: Dec, bps: number): Fill => ({ symbol: order.symbol, side: order.side, size: order.size, price: text(price), feeUsd: text(feeUsd(price.times(order.size), bps)) });
    if (order.trigger?.kind === 'take_profit') return fillOf(toTick(order.trigger.price, tickSize, buy ? 'up' : 'down'), this.config.makerFeeBps);
    const from = order.trigger?.kind === 'stop' ? order.trigger.price : order.referencePrice;
    const slipped = dec(from).times(1 + ((buy ? 1 : -1) * this.config.slippageBps) / 10_000);
    const touch = toTick(slipped, tickSize, buy ? 'up' : 'down');
    const limit = order.limitPrice === undefined ? null : dec(order.limitPrice);
    if (limit !== null && (buy ? limit.lt(touch) : limit.gt(touch))) throw new OrderUnfilled(`the paper limit order at ${text(limit)} found no price within it: the touch is ${text(touch)} (immediate-or-cancel, as at a live venue)`);
    return fillOf(touch, this.config.takerFeeBps);
  }

  /** Paper orders are never placed twice (they fill in the tick that decides them). */
  async findOrder(): Promise<Fill | null> {
    return null;
  }

  async market(symbol: string): Promise<MarketRules> {
    return this.config.markets[symbol] ?? DEFAULT_MARKET_RULES;
  }
}
