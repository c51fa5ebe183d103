import { describe, expect, it } from 'vitest';
import { backtestReport, equityCurve, type EquityPoint } from './backtest-report.js';

const DAY = 86_400_000;
const point = (day: number, equityUsd: number, exposed = true): EquityPoint => ({ at: new Date(day * DAY).toISOString(), equityUsd, exposed });

describe('backtestReport', () => {
  it('computes return, drawdown from the running peak, trade statistics and exposure', () => {
    const series = [point(1, 110), point(2, 99), point(3, 121, false), point(4, 115.5, false)];
    const report = backtestReport({ startEquityUsd: 100, endEquityUsd: 115.5, series, closes: [12, -4, 8], trades: 6, feesUsd: 1.25, windowMs: 4 * DAY });
    expect(report).toMatchObject({ startEquityUsd: 100, endEquityUsd: 115.5, closedTrades: 3, trades: 6, feesUsd: 1.25, exposurePercent: 50 });
    expect(report.returnPercent).toBeCloseTo(15.5, 10);
    expect(report.maxDrawdownPercent).toBeCloseTo(10, 10); // 110 → 99
    expect(report.winRatePercent).toBeCloseTo(200 / 3, 10);
    expect(report.profitFactor).toBe(5);
    // Daily returns 10 %, -10 %, 22.2 %, -4.5 %: annualized by 365.25 ticks a year.
    const returns = [0.1, -0.1, 121 / 99 - 1, 115.5 / 121 - 1];
    const mean = returns.reduce((a, b) => a + b) / 4;
    const sd = Math.sqrt(returns.reduce((a, r) => a + (r - mean) ** 2, 0) / 3);
    const down = Math.sqrt((0.01 + (115.5 / 121 - 1) ** 2) / 4);
    expect(report.sharpe).toBeCloseTo((mean / sd) * Math.sqrt(365.25), 10);
    expect(report.sortino).toBeCloseTo((mean / down) * Math.sqrt(365.25), 10);
  });

  it("states its fills' assumptions: limit orders immediate-or-cancel, protective levels against each bar's high and low", () => {
    const { assumptions } = backtestReport({ startEquityUsd: 100, endEquityUsd: 100, series: [], closes: [], trades: 0, feesUsd: 0, windowMs: DAY });
    expect(assumptions.join('\n')).toMatch(/immediate-or-cancel/);
    expect(assumptions.join('\n')).toMatch(/each bar's high and low/);
    expect(assumptions.join('\n')).toMatch(/open when the market gapped/);
  });

  it('answers null where a figure has no meaning', () => {
    const flat = backtestReport({ startEquityUsd: 100, endEquityUsd: 100, series: [point(1, 100, false), point(2, 100, false)], closes: [], trades: 0, feesUsd: 0, windowMs: 2 * DAY });
    expect(flat).toMatchObject({ returnPercent: 0, maxDrawdownPercent: 0, sharpe: null, sortino: null, winRatePercent: null, profitFactor: null, exposurePercent: 0 });
    const noLoss = backtestReport({ startEquityUsd: 100, endEquityUsd: 120, series: [point(1, 110), point(2, 120)], closes: [20], trades: 2, feesUsd: 0, windowMs: 2 * DAY });
    expect(noLoss).toMatchObject({ profitFactor: null, winRatePercent: 100, sortino: null });
  });
});

describe('equityCurve', () => {
  it('keeps every point up to the limit, then thins evenly keeping the first and the last', () => {
    const series = Array.from({ length: 2_501 }, (_, i) => point(i, 100 + i));
    expect(equityCurve(series.slice(0, 10))).toHaveLength(10);
    const curve = equityCurve(series);
    expect(curve).toHaveLength(1_000);
    expect(curve[0]).toEqual({ at: series[0]!.at, equityUsd: 100 });
    expect(curve.at(-1)).toEqual({ at: series.at(-1)!.at, equityUsd: 2_600 });
    expect(new Set(curve.map((p) => p.at)).size).toBe(1_000);
  });
});
