import type { Fill } from './book.js';

export interface OrderRequest {
  symbol: string;
  side: 'buy' | 'sell';
  /** Units to trade (6 decimals). */
  size: number;
  /** The feed's price at the execution. */
  referencePrice: number;
  at: Date;
  /** Set for a live venue: the execution's id, so a repeat of the call places nothing new. */
  clientOrderId?: string;
}

/** The venue refused the order (a definitive answer: nothing was filled); its words in `message`. */
export class OrderRejected extends Error {
  override readonly name = 'OrderRejected';
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
  /** Places the order and answers its fill; throws OrderRejected when the venue refuses it. */
  place(order: OrderRequest): Promise<Fill>;
  /**
   * A live venue: the fill of the order placed with this client order id, or null when it holds none. Asked
   * before an order is placed again: real venues keep a client order id unique only among open orders,
   * so a filled order's id placed again is a second order.
   */
  findOrder(order: { clientOrderId: string; symbol: string }): Promise<Fill | null>;
}

/** Slippage against the buyer or seller and the fee, in basis points of the notional (docs/trading.md). */
export const PAPER_SLIPPAGE_BPS = 5;
export const PAPER_FEE_BPS = 10;

/** Fills every order whole at the reference price moved PAPER_SLIPPAGE_BPS against it, charging PAPER_FEE_BPS. */
export class PaperVenue implements Venue {
  readonly name = 'paper';
  readonly live = false;

  async place(order: OrderRequest): Promise<Fill> {
    const slip = order.side === 'buy' ? 1 + PAPER_SLIPPAGE_BPS / 10_000 : 1 - PAPER_SLIPPAGE_BPS / 10_000;
    const price = order.referencePrice * slip;
    return { symbol: order.symbol, side: order.side, size: order.size, price, feeUsd: (order.size * price * PAPER_FEE_BPS) / 10_000 };
  }

  /** Paper orders are never placed twice (they fill in the tick that decides them). */
  async findOrder(): Promise<Fill | null> {
    return null;
  }
}
