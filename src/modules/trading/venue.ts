import type { Fill } from './book.js';
import { dec, DEFAULT_MARKET_RULES, feeUsd, text, toTick, type MarketRules } from './money.js';

export interface OrderRequest {
  symbol: string;
  side: 'buy' | 'sell';
  /** Units to trade: whole lots of the venue's lot size (market()). */
  size: string;
  /** The feed's price at the execution. */
  referencePrice: number;
  /** A limit order's price, on the venue's tick: it fills at this price or better, at once, or not at all. Unset: a market order. */
  limitPrice?: string;
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
}

/**
 * How the paper venue fills: its fees and slippage in basis points of the notional, and each symbol's rules.
 * The feed's price is the middle of the market; the touch (what a taker meets) is `slippageBps` away from it.
 */
export interface PaperVenueConfig {
  /** The fee of a limit order priced inside the spread (between the feed's price and the touch): it fills at its price, as liquidity met within the tick. */
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
 * Fills every order whole. The touch is the reference price moved `slippageBps` against the order, on the
 * tick against it too. A market order, or a limit order priced at or through the touch, takes it (taker
 * fee); a limit order priced inside the spread fills at its own price (maker fee). The fee is the role's
 * basis points of the notional, rounded up to the cent (a fee is never rounded away).
 */
export class PaperVenue implements Venue {
  readonly name = 'paper';
  readonly live = false;

  constructor(private readonly config: PaperVenueConfig = PAPER_VENUE_DEFAULTS) {}

  async place(order: OrderRequest): Promise<Fill> {
    const buy = order.side === 'buy';
    const { tickSize } = await this.market(order.symbol);
    const slipped = dec(order.referencePrice).times(1 + ((buy ? 1 : -1) * this.config.slippageBps) / 10_000);
    const touch = toTick(slipped, tickSize, buy ? 'up' : 'down');
    const limit = order.limitPrice === undefined ? null : dec(order.limitPrice);
    const takes = limit === null || (buy ? limit.gte(touch) : limit.lte(touch));
    const price = takes ? touch : limit!;
    const bps = takes ? this.config.takerFeeBps : this.config.makerFeeBps;
    return { symbol: order.symbol, side: order.side, size: order.size, price: text(price), feeUsd: text(feeUsd(price.times(order.size), bps)) };
  }

  /** Paper orders are never placed twice (they fill in the tick that decides them). */
  async findOrder(): Promise<Fill | null> {
    return null;
  }

  async market(symbol: string): Promise<MarketRules> {
    return this.config.markets[symbol] ?? DEFAULT_MARKET_RULES;
  }
}
