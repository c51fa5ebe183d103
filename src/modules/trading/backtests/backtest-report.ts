// A backtest's report: what people look at first. Pure arithmetic over the replay's equity series and its
// closed trades (trade-list.ts), so the same replay always reports the same figures.

/** The equity after one tick, marked at that tick's prices, and whether the book held a position. */
export interface EquityPoint {
  at: string;
  equityUsd: number;
  exposed: boolean;
}

export interface BacktestReport {
  startEquityUsd: number;
  endEquityUsd: number;
  returnPercent: number;
  /** The largest fall from a running peak of the equity series, in percent of that peak. */
  maxDrawdownPercent: number;
  /** Per-tick returns' mean over their standard deviation, annualized by the ticks per year; null under two returns or none varying. */
  sharpe: number | null;
  /** As sharpe, over the downside deviation (returns below zero); null when no tick lost. */
  sortino: number | null;
  /** Round trips closed (trade-list.ts). */
  closedTrades: number;
  /** Share of closed trades whose P&L after fees is positive, in percent; null without any. */
  winRatePercent: number | null;
  /** The closed trades' profits over their losses, both after fees; null without a loss. */
  profitFactor: number | null;
  /** Every fill, opening or closing. */
  trades: number;
  feesUsd: number;
  /** Share of ticks that ended holding a position, in percent. */
  exposurePercent: number;
  /** How the replay fills (BACKTEST_ASSUMPTIONS). */
  assumptions: string[];
}

/**
 * How a replay fills, stated in every report (docs/trading.md, "Backtests"): what a reader must know before trusting
 * its figures. The paper venue's and the protective exits' rules (venue.ts, protective-exits.ts).
 */
export const BACKTEST_ASSUMPTIONS: readonly string[] = [
  "orders fill on the paper venue, whole (no volume limit): a market order at the touch, the feed's price moved TRADING_PAPER_SLIPPAGE_BPS against it, with the taker fee",
  'a limit order is immediate-or-cancel, as a live venue gets it: at or through the touch it fills there (taker); inside the spread nothing fills and it is cancelled, never filled as maker',
  "protective levels are checked against each bar's high and low (the strategy's candles closed since the last tick, at most as many as a tick reads), then the tick's price",
  "a stop-loss or trailing stop fills at its level, or at the bar's open when the market gapped past it, moved to the touch (taker); a take-profit, a resting limit, fills at its level or the better open of a gap (maker)",
  'where one bar reached both a stop and a take-profit, the stop is assumed first (the order within a bar is unknown)',
];

/** Points an equity curve keeps at most. */
export const MAX_CURVE_POINTS = 1_000;
const YEAR_MS = 365.25 * 86_400_000;

export function backtestReport(input: {
  startEquityUsd: number;
  endEquityUsd: number;
  series: readonly EquityPoint[];
  /** Each closed trade's P&L after its fees (its entries' and exits'), in order. */
  closes: readonly number[];
  trades: number;
  feesUsd: number;
  windowMs: number;
}): BacktestReport {
  const { series, closes } = input;
  const equities = [input.startEquityUsd, ...series.map((p) => p.equityUsd)];
  let peak = equities[0]!;
  let maxDrawdown = 0;
  for (const equity of equities) {
    peak = Math.max(peak, equity);
    if (peak > 0) maxDrawdown = Math.max(maxDrawdown, (peak - equity) / peak);
  }
  const returns = equities.slice(1).map((equity, i) => (equities[i]! > 0 ? equity / equities[i]! - 1 : 0));
  const perYear = series.length > 0 && input.windowMs > 0 ? (series.length / input.windowMs) * YEAR_MS : 0;
  const mean = returns.length ? returns.reduce((a, b) => a + b, 0) / returns.length : 0;
  const deviation = Math.sqrt(returns.reduce((a, r) => a + (r - mean) ** 2, 0) / Math.max(returns.length - 1, 1));
  const downside = Math.sqrt(returns.reduce((a, r) => a + Math.min(r, 0) ** 2, 0) / Math.max(returns.length, 1));
  const wins = closes.filter((pnl) => pnl > 0);
  const grossProfit = wins.reduce((a, b) => a + b, 0);
  const grossLoss = -closes.filter((pnl) => pnl < 0).reduce((a, b) => a + b, 0);
  return {
    startEquityUsd: input.startEquityUsd,
    endEquityUsd: input.endEquityUsd,
    returnPercent: input.startEquityUsd > 0 ? (input.endEquityUsd / input.startEquityUsd - 1) * 100 : 0,
    maxDrawdownPercent: maxDrawdown * 100,
    sharpe: returns.length >= 2 && deviation > 0 ? (mean / deviation) * Math.sqrt(perYear) : null,
    sortino: returns.length >= 2 && downside > 0 ? (mean / downside) * Math.sqrt(perYear) : null,
    closedTrades: closes.length,
    winRatePercent: closes.length ? (wins.length / closes.length) * 100 : null,
    profitFactor: grossLoss > 0 ? grossProfit / grossLoss : null,
    trades: input.trades,
    feesUsd: input.feesUsd,
    exposurePercent: series.length ? (series.filter((p) => p.exposed).length / series.length) * 100 : 0,
    assumptions: [...BACKTEST_ASSUMPTIONS],
  };
}

/** The series thinned to at most `max` points, evenly, always keeping the first and the last. */
export function equityCurve(series: readonly EquityPoint[], max = MAX_CURVE_POINTS): Array<{ at: string; equityUsd: number }> {
  const pick = (p: EquityPoint) => ({ at: p.at, equityUsd: p.equityUsd });
  if (series.length <= max) return series.map(pick);
  const step = (series.length - 1) / (max - 1);
  return Array.from({ length: max }, (_, i) => pick(series[Math.round(i * step)]!));
}
