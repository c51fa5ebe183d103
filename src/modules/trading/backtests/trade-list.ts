// The trade list of a backtest or a runtime: its fills grouped into round trips, as freqtrade and
// backtesting.py list trades. A trade opens when a symbol's position leaves zero and closes when it returns
// to zero (or flips: the flipping fill closes one trade and opens the next, its size and fee split between
// them by quantity). Fills in between that grow or shrink the position belong to the trade. Exact decimal
// arithmetic throughout (money.ts), so the trades' net P&L adds up to the equity's change to the cent.
import { dec, text, ZERO, type Amount, type Dec } from '../engine/money.js';

/** A filled order, as the execution records it. */
export interface TradeFill {
  at: string;
  symbol: string;
  side: 'buy' | 'sell';
  size: Amount;
  price: Amount;
  feeUsd: Amount;
  /** Why the order was placed (the decision's exit reason, `flatten`, or `signal`): a closing fill's is its trade's exit reason. */
  reason: string;
}

export interface Trade {
  symbol: string;
  side: 'long' | 'short';
  /** open: still held when the list was made; its P&L is marked at `markPrice`. */
  status: 'open' | 'closed';
  entryAt: string;
  /** The volume-weighted price of the fills that opened or grew the position. */
  entryPrice: number;
  exitAt: string | null;
  /** The volume-weighted price of the fills that shrank or closed it; null while open. */
  exitPrice: number | null;
  /** The largest quantity held during the trade, in units of the symbol. */
  size: string;
  /** Fills that belong to the trade (a flipping fill counts in both trades). */
  fills: number;
  feesUsd: number;
  /** Before fees: what the exits received less what the entries paid (a short the other way), an open trade's remainder at `markPrice`. */
  pnlUsd: number;
  /** After every fee of its fills: what the trade added to the equity. */
  netPnlUsd: number;
  /** Net P&L over what its entries paid, in percent. */
  returnPercent: number;
  exitReason: string | null;
  /** An open trade: the price its remainder is marked at. */
  markPrice: number | null;
}

interface Open {
  symbol: string;
  sign: 1 | -1;
  entryAt: string;
  qty: Dec;
  maxQty: Dec;
  entryQty: Dec;
  entryUsd: Dec;
  exitQty: Dec;
  exitUsd: Dec;
  fees: Dec;
  fills: number;
  exitAt: string | null;
  exitReason: string | null;
}

/**
 * The fills (oldest first) as round trips, oldest entry first; a position still held is an open trade marked
 * at `marks[symbol]` (its last fill's price when no mark is given).
 */
export function tradeList(fills: readonly TradeFill[], marks: Record<string, number> = {}): Trade[] {
  const open = new Map<string, Open>();
  const done: Array<{ trade: Open; mark: Dec | null }> = [];
  const lastPrice = new Map<string, Dec>();
  for (const fill of fills) {
    const size = dec(fill.size);
    if (size.isZero()) continue;
    const price = dec(fill.price);
    const fee = dec(fill.feeUsd);
    lastPrice.set(fill.symbol, price);
    const sign = fill.side === 'buy' ? 1 : -1;
    let rest = size;
    const current = open.get(fill.symbol);
    if (current && current.sign !== sign) {
      // The part that shrinks (or closes) the held position, and its share of the fee.
      const closing = minOf(rest, current.qty);
      current.exitQty = current.exitQty.plus(closing);
      current.exitUsd = current.exitUsd.plus(closing.times(price));
      current.fees = current.fees.plus(fee.times(closing).div(size));
      current.qty = current.qty.minus(closing);
      current.fills += 1;
      current.exitAt = fill.at;
      rest = rest.minus(closing);
      if (current.qty.isZero()) {
        current.exitReason = fill.reason;
        done.push({ trade: current, mark: null });
        open.delete(fill.symbol);
      }
    }
    if (rest.isZero()) continue;
    // What is left opens a trade, or grows the one held on this side.
    const trade = open.get(fill.symbol) ?? { symbol: fill.symbol, sign, entryAt: fill.at, qty: ZERO, maxQty: ZERO, entryQty: ZERO, entryUsd: ZERO, exitQty: ZERO, exitUsd: ZERO, fees: ZERO, fills: 0, exitAt: null, exitReason: null };
    trade.qty = trade.qty.plus(rest);
    trade.maxQty = maxOf(trade.maxQty, trade.qty);
    trade.entryQty = trade.entryQty.plus(rest);
    trade.entryUsd = trade.entryUsd.plus(rest.times(price));
    trade.fees = trade.fees.plus(fee.times(rest).div(size));
    trade.fills += 1;
    open.set(fill.symbol, trade);
  }
  for (const trade of open.values()) done.push({ trade, mark: marks[trade.symbol] !== undefined ? dec(marks[trade.symbol]!) : lastPrice.get(trade.symbol)! });
  done.sort((a, b) => (a.trade.entryAt < b.trade.entryAt ? -1 : a.trade.entryAt > b.trade.entryAt ? 1 : 0));
  return done.map(({ trade, mark }) => viewOf(trade, mark));
}

function viewOf(t: Open, mark: Dec | null): Trade {
  // Exits less entries for a long, entries less exits for a short; an open remainder counts at the mark.
  const remainder = mark ? t.qty.times(mark) : ZERO;
  const pnl = t.exitUsd.plus(remainder).minus(t.entryUsd).times(t.sign);
  const net = pnl.minus(t.fees);
  return {
    symbol: t.symbol,
    side: t.sign === 1 ? 'long' : 'short',
    status: mark ? 'open' : 'closed',
    entryAt: t.entryAt,
    entryPrice: t.entryUsd.div(t.entryQty).toNumber(),
    exitAt: mark ? null : t.exitAt,
    exitPrice: mark || t.exitQty.isZero() ? null : t.exitUsd.div(t.exitQty).toNumber(),
    size: text(t.maxQty),
    fills: t.fills,
    feesUsd: t.fees.toNumber(),
    pnlUsd: pnl.toNumber(),
    netPnlUsd: net.toNumber(),
    returnPercent: t.entryUsd.isZero() ? 0 : net.div(t.entryUsd).times(100).toNumber(),
    exitReason: mark ? null : t.exitReason,
    markPrice: mark ? mark.toNumber() : null,
  };
}

const minOf = (a: Dec, b: Dec) => (a.lt(b) ? a : b);
const maxOf = (a: Dec, b: Dec) => (a.gt(b) ? a : b);

/** Why an execution's order was placed, from its decision: the reason its trade closed, when it closes one. */
export function reasonOf(decision: Record<string, unknown> | null | undefined): string {
  if (decision?.kind === 'exit' && typeof decision.reason === 'string') return decision.reason;
  if (decision?.kind === 'flatten') return 'flatten';
  return 'signal';
}

export const TRADE_CSV_COLUMNS = ['symbol', 'side', 'status', 'entry_at', 'entry_price', 'exit_at', 'exit_price', 'size', 'fills', 'fees_usd', 'pnl_usd', 'net_pnl_usd', 'return_percent', 'exit_reason', 'mark_price'] as const;

/** The trades as CSV with a header line (RFC 4180; no cell needs quoting: symbols and reasons are word characters). */
export function tradesCsv(trades: readonly Trade[]): string {
  const cell = (v: string | number | null) => (v === null ? '' : String(v));
  const lines = trades.map((t) =>
    [t.symbol, t.side, t.status, t.entryAt, t.entryPrice, t.exitAt, t.exitPrice, t.size, t.fills, t.feesUsd, t.pnlUsd, t.netPnlUsd, t.returnPercent, t.exitReason, t.markPrice].map(cell).join(','),
  );
  return [TRADE_CSV_COLUMNS.join(','), ...lines].join('\r\n') + '\r\n';
}
