// The risk engine of a tick (NautilusTrader's split: the strategy decides, risk may refuse, never decides).
// Two questions, both about the book as it would stand: how large may a symbol's position grow before a
// sizing limit stops it (roomFor: what an order sized "as much as allowed" is cut to, engine.ts), and does
// one order pass the limits and the kill switch (assessOrder). Nothing here reads a clock or the venue.
import { qtyOf, type Marked, type Position } from './book.js';
import type { KillSwitchMode } from '../tables.js';

export interface RiskLimits {
  fundLimitUsd: number;
  maxLeverage: number;
  maxDrawdownPercent: number;
}

/** An account's limit on the gross exposure of all its runtimes, and the positions its other runtimes hold. */
export interface AccountRisk {
  maxExposureUsd: number | null;
  otherPositions: Array<Record<string, Position>>;
}

/** The limits a smaller order can meet (gross exposure); the drawdown is met by no size. */
export type SizingLimit = 'fund_limit' | 'leverage' | 'account_limit';

/**
 * Limits whose block hands the runtime to its owner (needs_review): a drawdown past the limit is a loss to
 * look at, and no smaller order meets it. Any other block names its limit and the runtime runs on.
 */
export const REVIEW_LIMITS: readonly string[] = ['drawdown'];

/** Room for float rounding when an order meets a limit exactly. */
const EPSILON = 1e-9;

/** Gross exposure of positions at `prices` (a symbol without a price at its average price), leaving out `except`. */
function grossUsd(positions: Record<string, Position>, prices: Record<string, number>, except?: string): number {
  let usd = 0;
  for (const [symbol, p] of Object.entries(positions)) if (symbol !== except) usd += Math.abs(qtyOf(p)) * (prices[symbol] ?? Number(p.avgPrice));
  return usd;
}

/** The account's other runtimes' gross exposure, at this tick's prices where it has them. */
const othersUsd = (account: AccountRisk, prices: Record<string, number>) => account.otherPositions.reduce((sum, positions) => sum + grossUsd(positions, prices), 0);

/**
 * The largest position (units, long or short) `symbol` may reach with the book's other positions as they
 * stand, and the sizing limit that sets it: gross exposure ≤ fundLimitUsd × maxLeverage, ≤ maxLeverage ×
 * equity, and with the account's runtimes ≤ its maxExposureUsd. Zero when the rest of the book already
 * takes the room. `marginBps` (a live venue's slippage allowance) keeps the position that much below the room
 * twice over: its re-check before sending values it at the quote, up to the allowance above the decided price,
 * plus the allowance again (quote-check.ts), and a position sized to the room itself would be refused there.
 */
export function roomFor(symbol: string, positions: Record<string, Position>, prices: Record<string, number>, equityUsd: number, limits: RiskLimits, account?: AccountRisk, marginBps = 0): { qty: number; limit: SizingLimit } {
  const caps: Array<[SizingLimit, number]> = [
    ['fund_limit', limits.fundLimitUsd * limits.maxLeverage],
    ['leverage', limits.maxLeverage * Math.max(equityUsd, 0)],
  ];
  if (account?.maxExposureUsd != null) caps.push(['account_limit', account.maxExposureUsd - othersUsd(account, prices)]);
  const [limit, capUsd] = caps.reduce((least, cap) => (cap[1] < least[1] ? cap : least));
  const margin = (1 + marginBps / 10_000) ** 2;
  return { qty: Math.max(0, (capUsd - grossUsd(positions, prices, symbol)) / (prices[symbol]! * margin)), limit };
}

export interface OrderRisk {
  /** blocked: a limit stopped an order that adds exposure; halted: the kill switch did. */
  status: 'completed' | 'blocked' | 'halted';
  /** The limits that blocked the order (none for an order that only shrinks a position). */
  blockedBy: string[];
  riskAssessment: Record<string, unknown>;
}

/**
 * One order (null: none) as the book would stand after it: `positions` are the book's with the tick's
 * earlier orders in, `before` the tick's valuation (equity and drawdown). A breach blocks an order that
 * adds exposure, never one that only shrinks a position (a close, or a partial one that does not flip it):
 * a limit stops risk being added, never taken off. `breaches` lists every limit the book breaches.
 */
export function assessOrder(a: {
  limits: RiskLimits;
  account?: AccountRisk;
  killSwitch: KillSwitchMode;
  positions: Record<string, Position>;
  prices: Record<string, number>;
  before: Marked;
  /** `protective`: a protective level's exit or the owner's flatten (the book's own closes, not the strategy's). */
  order: { symbol: string; delta: number; protective?: boolean } | null;
}): OrderRisk {
  const { limits, order, before } = a;
  const exposureUsd = grossUsd(a.positions, a.prices);
  const heldQty = order ? qtyOf(a.positions[order.symbol]) : 0;
  const after = heldQty + (order?.delta ?? 0);
  const exposureAfterUsd = order ? exposureUsd + (Math.abs(after) - Math.abs(heldQty)) * a.prices[order.symbol]! : exposureUsd;
  const leverageAfter = before.equityUsd > 0 ? exposureAfterUsd / before.equityUsd : Infinity;
  const capacityUsd = limits.fundLimitUsd * limits.maxLeverage;
  const checks = [
    { name: 'drawdown', value: before.drawdownPercent, limit: limits.maxDrawdownPercent, ok: before.drawdownPercent < limits.maxDrawdownPercent },
    { name: 'fund_limit', value: exposureAfterUsd, limit: capacityUsd, ok: exposureAfterUsd <= capacityUsd * (1 + EPSILON) },
    { name: 'leverage', value: leverageAfter, limit: limits.maxLeverage, ok: leverageAfter <= limits.maxLeverage * (1 + EPSILON) },
  ];
  if (a.account?.maxExposureUsd != null) {
    const accountAfterUsd = othersUsd(a.account, a.prices) + exposureAfterUsd;
    checks.push({ name: 'account_limit', value: accountAfterUsd, limit: a.account.maxExposureUsd, ok: accountAfterUsd <= a.account.maxExposureUsd * (1 + EPSILON) });
  }
  const breached = checks.filter((c) => !c.ok).map((c) => c.name);
  const reducing = order !== null && Math.abs(after) < Math.abs(heldQty) && Math.sign(after) !== -Math.sign(heldQty);
  const blockedBy = order !== null && !reducing ? breached : [];
  // The kill switch stops new risk, never protection: `halt` stops the strategy (its closes too) but lets a
  // protective exit and the owner's flatten through (each only closes); `reduce_only` lets every close through.
  const protective = order !== null && reducing && order.protective === true;
  const killed = (a.killSwitch === 'halt' && !protective) || (a.killSwitch === 'reduce_only' && order !== null && !reducing);
  const status = blockedBy.length ? 'blocked' : killed ? 'halted' : 'completed';
  const riskAssessment = {
    ...limits,
    equityUsd: before.equityUsd,
    exposureUsd,
    exposureAfterUsd,
    leverageAfter,
    drawdownPercent: before.drawdownPercent,
    checks,
    breaches: breached,
    killSwitch: a.killSwitch,
    outcome: blockedBy.length ? 'blocked' : killed ? 'halted' : !order ? 'no_order' : breached.length ? 'approved_reducing' : 'approved',
  };
  return { status, blockedBy, riskAssessment };
}
