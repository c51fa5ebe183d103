/** A runtime's paper holdings. Quantities are in units of the symbol; negative is short. */
export interface Position {
  qty: number;
  avgPrice: number;
  /** The order's protective levels that opened or grew it: each tick closes it once the price crosses one (engine.ts). */
  stopLoss?: number;
  takeProfit?: number;
  /** A trailing stop: the position closes once the price falls this far from its best since entry (`bestPrice`). */
  trailingStopPercent?: number;
  /** The highest price since entry for a long, the lowest for a short: what the trailing stop follows. */
  bestPrice?: number;
}

/**
 * The paper book of one runtime: it starts with `fundLimitUsd` in cash. Equity is cash plus every
 * position at the current price; drawdown is measured from the highest equity seen at an execution.
 */
export interface Book {
  cashUsd: number;
  positions: Record<string, Position>;
  realizedPnlUsd: number;
  feesUsd: number;
  peakEquityUsd: number;
  trades: number;
}

export interface Fill {
  symbol: string;
  side: 'buy' | 'sell';
  /** Units filled (6 decimals). */
  size: number;
  price: number;
  feeUsd: number;
}

export interface Marked {
  equityUsd: number;
  /** Gross exposure: the sum of |position| at the current prices. */
  exposureUsd: number;
  unrealizedPnlUsd: number;
  drawdownPercent: number;
}

export const openBook = (fundLimitUsd: number): Book => ({ cashUsd: fundLimitUsd, positions: {}, realizedPnlUsd: 0, feesUsd: 0, peakEquityUsd: fundLimitUsd, trades: 0 });

/** The book valued at `prices` (a symbol without a price is valued at its average price). */
export function markToMarket(book: Book, prices: Record<string, number>): Marked {
  let equityUsd = book.cashUsd;
  let exposureUsd = 0;
  let unrealizedPnlUsd = 0;
  for (const [symbol, position] of Object.entries(book.positions)) {
    const price = prices[symbol] ?? position.avgPrice;
    equityUsd += position.qty * price;
    exposureUsd += Math.abs(position.qty) * price;
    unrealizedPnlUsd += position.qty * (price - position.avgPrice);
  }
  const peak = Math.max(book.peakEquityUsd, equityUsd);
  return { equityUsd, exposureUsd, unrealizedPnlUsd, drawdownPercent: peak > 0 ? ((peak - equityUsd) / peak) * 100 : 0 };
}

/** The book after a fill: cash moves by the notional and the fee, the closed part of a position realizes PnL. */
export function applyFill(book: Book, fill: Fill): Book {
  const signed = fill.side === 'buy' ? fill.size : -fill.size;
  const held = book.positions[fill.symbol] ?? { qty: 0, avgPrice: 0 };
  const qty = held.qty + signed;
  // The part of the order that closes the held position realizes its PnL; the rest opens at the fill price.
  const closing = Math.sign(signed) !== Math.sign(held.qty) ? Math.min(Math.abs(signed), Math.abs(held.qty)) : 0;
  const realized = closing * (fill.price - held.avgPrice) * Math.sign(held.qty);
  let avgPrice = held.avgPrice;
  if (Math.abs(qty) < 1e-12) avgPrice = 0;
  else if (Math.sign(qty) !== Math.sign(held.qty)) avgPrice = fill.price;
  else if (Math.abs(qty) > Math.abs(held.qty)) avgPrice = (held.avgPrice * Math.abs(held.qty) + fill.price * Math.abs(signed)) / Math.abs(qty);
  const positions = { ...book.positions };
  // A position that shrinks keeps its protective levels; one that closes or flips leaves them behind.
  const kept = Math.sign(qty) === Math.sign(held.qty) ? { stopLoss: held.stopLoss, takeProfit: held.takeProfit, trailingStopPercent: held.trailingStopPercent, bestPrice: held.bestPrice } : {};
  if (Math.abs(qty) < 1e-12) delete positions[fill.symbol];
  else positions[fill.symbol] = withoutUndefined({ qty, avgPrice, ...kept });
  return {
    cashUsd: book.cashUsd - signed * fill.price - fill.feeUsd,
    positions,
    realizedPnlUsd: book.realizedPnlUsd + realized,
    feesUsd: book.feesUsd + fill.feeUsd,
    peakEquityUsd: book.peakEquityUsd,
    trades: book.trades + 1,
  };
}

const withoutUndefined = (position: Position): Position => Object.fromEntries(Object.entries(position).filter(([, v]) => v !== undefined)) as unknown as Position;
