import { definedOnly } from '../../../platform/defined-only.js';
import { dec, text, ZERO, type Amount, type Dec } from './money.js';

/** A runtime's paper holdings. Quantities are in units of the symbol; negative is short. */
export interface Position {
  qty: Amount;
  avgPrice: Amount;
  /** The order's protective levels that opened or grew it: each tick closes it once the price crosses one (engine.ts). */
  stopLoss?: number;
  takeProfit?: number;
  /** A trailing stop: the position closes once the price falls this far from its best since entry (`bestPrice`). */
  trailingStopPercent?: number;
  /** The highest price since entry for a long, the lowest for a short: what the trailing stop follows. */
  bestPrice?: number;
  /** When its levels were last checked (ISO): the next tick checks them against the bars closed since (protective-exits.ts). */
  checkedAt?: string;
}

/**
 * The paper book of one runtime: it starts with `fundLimitUsd` in cash. Equity is cash plus every
 * position at the current price; drawdown is measured from the highest equity seen at an execution.
 * Every amount is exact decimal text (money.ts): cash moves by each fill's notional and fee to the digit.
 */
export interface Book {
  cashUsd: Amount;
  positions: Record<string, Position>;
  realizedPnlUsd: Amount;
  feesUsd: Amount;
  peakEquityUsd: Amount;
  trades: number;
  /** A live venue's protective orders resting for this book's positions (protective-orders.ts); absent on paper. */
  resting?: RestingOrder[];
}

/** A protective order resting at a live venue: it sells a long (buys a short) once the price reaches its trigger. */
export interface RestingOrder {
  symbol: string;
  kind: 'stop_loss' | 'take_profit';
  side: 'buy' | 'sell';
  /** Units: the position's, in whole lots. */
  size: string;
  /** The level, on the venue's tick. */
  triggerPrice: string;
  /** Ours, derived from the position and its level (protective-orders.ts): the same order is never rested twice. */
  clientOrderId: string;
}

export interface Fill {
  symbol: string;
  side: 'buy' | 'sell';
  /** Units filled: whole lots of the venue's lot size. */
  size: Amount;
  price: Amount;
  feeUsd: Amount;
}

/**
 * The book valued at the feed's prices: a view for decisions, risk checks and the API, never booked, so in
 * numbers (the prices themselves are numbers); the peak equity it moves is stored to the cent.
 */
export interface Marked {
  equityUsd: number;
  /** Gross exposure: the sum of |position| at the current prices. */
  exposureUsd: number;
  unrealizedPnlUsd: number;
  drawdownPercent: number;
}

/** Decimals an average price keeps (the one amount that is a quotient, not exact). */
const AVG_PRICE_DECIMALS = 12;

export const openBook = (fundLimitUsd: Amount): Book => {
  const fund = text(dec(fundLimitUsd));
  return { cashUsd: fund, positions: {}, realizedPnlUsd: '0', feesUsd: '0', peakEquityUsd: fund, trades: 0 };
};

/** The book valued at `prices` (a symbol without a price is valued at its average price). */
export function markToMarket(book: Book, prices: Record<string, number>): Marked {
  let equityUsd = Number(book.cashUsd);
  let exposureUsd = 0;
  let unrealizedPnlUsd = 0;
  for (const [symbol, position] of Object.entries(book.positions)) {
    const qty = Number(position.qty);
    const avgPrice = Number(position.avgPrice);
    const price = prices[symbol] ?? avgPrice;
    equityUsd += qty * price;
    exposureUsd += Math.abs(qty) * price;
    unrealizedPnlUsd += qty * (price - avgPrice);
  }
  const peak = Math.max(Number(book.peakEquityUsd), equityUsd);
  return { equityUsd, exposureUsd, unrealizedPnlUsd, drawdownPercent: peak > 0 ? ((peak - equityUsd) / peak) * 100 : 0 };
}

/** The book's peak equity after a valuation: the new high to the cent, else the stored one. */
export const peakAfter = (book: Book, marked: Marked): Amount => (marked.equityUsd > Number(book.peakEquityUsd) ? marked.equityUsd.toFixed(2) : book.peakEquityUsd);

/** The book after a fill: cash moves by the notional and the fee, the closed part of a position realizes PnL. */
export function applyFill(book: Book, fill: Fill): Book {
  const size = dec(fill.size);
  const price = dec(fill.price);
  const signed = fill.side === 'buy' ? size : size.neg();
  const held = book.positions[fill.symbol] ?? { qty: 0, avgPrice: 0 };
  const heldQty = dec(held.qty);
  const qty = heldQty.plus(signed);
  // The part of the order that closes the held position realizes its PnL; the rest opens at the fill price.
  const closing = signOf(signed) !== signOf(heldQty) ? (size.lt(heldQty.abs()) ? size : heldQty.abs()) : ZERO;
  const realized = closing.times(price.minus(held.avgPrice)).times(signOf(heldQty));
  let avgPrice = dec(held.avgPrice);
  if (qty.isZero()) avgPrice = ZERO;
  else if (signOf(qty) !== signOf(heldQty)) avgPrice = price;
  else if (qty.abs().gt(heldQty.abs())) avgPrice = avgPrice.times(heldQty.abs()).plus(price.times(size)).div(qty.abs()).toDecimalPlaces(AVG_PRICE_DECIMALS);
  const positions = { ...book.positions };
  // A position that shrinks keeps its protective levels; one that closes or flips leaves them behind.
  const kept = signOf(qty) === signOf(heldQty) ? { stopLoss: held.stopLoss, takeProfit: held.takeProfit, trailingStopPercent: held.trailingStopPercent, bestPrice: held.bestPrice, checkedAt: held.checkedAt } : {};
  if (qty.isZero()) delete positions[fill.symbol];
  else positions[fill.symbol] = definedOnly({ qty: text(qty), avgPrice: text(avgPrice), ...kept });
  return {
    cashUsd: text(dec(book.cashUsd).minus(signed.times(price)).minus(fill.feeUsd)),
    positions,
    realizedPnlUsd: text(dec(book.realizedPnlUsd).plus(realized)),
    feesUsd: text(dec(book.feesUsd).plus(fill.feeUsd)),
    peakEquityUsd: book.peakEquityUsd,
    trades: book.trades + 1,
    ...(book.resting ? { resting: book.resting } : {}),
  };
}

/** The position's quantity as a number, for decisions (the book itself stays exact). */
export const qtyOf = (position: Position | undefined): number => (position ? Number(position.qty) : 0);

const signOf = (value: Dec): number => (value.isZero() ? 0 : value.isNegative() ? -1 : 1);
