// A backtest's trade list (issue 42, item 7): the report's win rate and profit factor are after fees, and
// each equals what a trader computes from the trade list; the trades' net P&L adds up to the equity's change;
// the CSV answers the same trades.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const HOUR = 3_600_000;

/** Win rate and profit factor from a list of P&Ls, as a trader computes them. */
function stats(pnls: number[]) {
  const profit = pnls.filter((p) => p > 0).reduce((a, b) => a + b, 0);
  const loss = -pnls.filter((p) => p < 0).reduce((a, b) => a + b, 0);
  return { winRatePercent: (pnls.filter((p) => p > 0).length / pnls.length) * 100, profitFactor: profit / loss };
}

/** The CSV's lines as objects keyed by its header. */
function parseCsv(text: string): Array<Record<string, string>> {
  const [header, ...lines] = text.trim().split('\r\n');
  const names = header!.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((cell, i) => [names[i]!, cell])));
}

describe('backtest trade list', () => {
  it('reports win rate and profit factor after fees, each equal to the trade list, whose net P&L adds up to the equity change', async () => {
    const { token, strategy } = await launch(h, 'trader', 'Fast trend, both ways. fast=2 slow=6 short=true');
    const to = new Date(Math.floor(h.clock.now().getTime() / HOUR) * HOUR).toISOString();
    const window = { from: new Date(Date.parse(to) - 8 * HOUR).toISOString(), to, fundLimitUsd: 10_000, maxLeverage: 1, maxDrawdownPercent: 90 };
    const answered = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...window, executionsLimit: 0 });
    expect(answered.status).toBe(200);
    const { report, tradeList, tradeListTotal, book } = answered.body.data;
    expect(tradeListTotal).toBe(tradeList.length);
    const closed = tradeList.filter((t: any) => t.status === 'closed');
    expect(closed.length).toBeGreaterThan(20);
    expect(report.closedTrades).toBe(closed.length);

    // Net of fees: what the trade list says, computed here from its netPnlUsd.
    const net = stats(closed.map((t: any) => t.netPnlUsd));
    expect(report.winRatePercent).toBeCloseTo(net.winRatePercent, 9);
    expect(report.profitFactor).toBeCloseTo(net.profitFactor, 9);
    // Before fees the same trades look better: the figures the report gave before.
    const gross = stats(closed.map((t: any) => t.pnlUsd));
    expect(gross.winRatePercent).toBeGreaterThan(net.winRatePercent);
    expect(gross.profitFactor).toBeGreaterThan(net.profitFactor);

    // Each trade: fees and P&L consistent, entries before exits; together they are the book's fees and the equity change.
    for (const t of tradeList) {
      expect(t.netPnlUsd).toBeCloseTo(t.pnlUsd - t.feesUsd, 9);
      if (t.status === 'closed') expect(Date.parse(t.exitAt)).toBeGreaterThan(Date.parse(t.entryAt));
      const sign = t.side === 'long' ? 1 : -1;
      // A trade of one entry and one exit: its size times the price moved.
      if (t.status === 'closed' && t.fills === 2) expect(t.pnlUsd).toBeCloseTo(sign * (t.exitPrice - t.entryPrice) * Number(t.size), 6);
    }
    const sum = (f: (t: any) => number) => tradeList.reduce((a: number, t: any) => a + f(t), 0);
    expect(sum((t) => t.feesUsd)).toBeCloseTo(report.feesUsd, 6);
    expect(sum((t) => t.netPnlUsd)).toBeCloseTo(report.endEquityUsd - report.startEquityUsd, 6);
    expect(sum((t) => t.netPnlUsd)).toBeCloseTo(book.pnlUsd, 6);

    // The CSV: the same trades, every one, as text/csv.
    const csv = await h.app.origins.api!.inject({ method: 'POST', url: `/agentic-trading/strategies/${strategy.id}/backtest/trades.csv`, headers: { authorization: `Bearer ${token}` }, payload: window });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    const rows = parseCsv(csv.body);
    expect(rows).toHaveLength(tradeList.length);
    for (const [i, row] of rows.entries()) {
      const t = tradeList[i];
      expect(row).toMatchObject({ symbol: t.symbol, side: t.side, status: t.status, entry_at: t.entryAt, exit_at: t.exitAt ?? '', size: t.size, exit_reason: t.exitReason ?? '' });
      expect(Number(row.net_pnl_usd)).toBe(t.netPnlUsd);
      expect(Number(row.fees_usd)).toBe(t.feesUsd);
    }

    // Pages of the same list.
    const page = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...window, executionsLimit: 0, tradeListOffset: 5, tradeListLimit: 3 })).body.data;
    expect(page.tradeList).toEqual(tradeList.slice(5, 8));
    expect(page.tradeListTotal).toBe(tradeList.length);
  });

  it("refuses the CSV without an identity token and of another user's private strategy", async () => {
    const owner = await h.app.identityToken('owner');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', owner, strategyBody())).body.data;
    const to = new Date(Math.floor(h.clock.now().getTime() / HOUR) * HOUR).toISOString();
    const body = { from: new Date(Date.parse(to) - HOUR).toISOString(), to, fundLimitUsd: 1000, maxLeverage: 1, maxDrawdownPercent: 50 };
    const url = `/agentic-trading/strategies/${strategy.id}/backtest/trades.csv`;
    expect((await h.call('POST', url, null, body)).status).toBe(401);
    const mallory = await h.app.identityToken('mallory');
    expect(await h.call('POST', url, mallory, body)).toMatchObject({ status: 404, body: { data: { reason: 'strategy_not_found' } } });
    expect((await h.call('POST', url, owner, { ...body, from: to })).body.data.reason).toBe('invalid_backtest_window');
  });
});

describe('runtime trade list', () => {
  it("lists a runtime's round trips, whose net P&L is its book's, as JSON and CSV, to its owner only", async () => {
    const { token, runtimeId } = await launch(h, 'runner', 'Fast trend, both ways. fast=2 slow=5 short=true', { fundLimitUsd: 5_000, maxLeverage: 1, maxDrawdownPercent: 90 });
    for (let i = 0; i < 45; i++) await h.nextMinute();
    const trades = await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades`, token);
    expect(trades.status).toBe(200);
    const list = trades.body.data;
    const runtime = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    expect(list.filter((t: any) => t.status === 'closed').length).toBeGreaterThan(3);
    // An open trade is marked where the book is, so the trades add up to the book's P&L and fees.
    expect(list.filter((t: any) => t.status === 'open').map((t: any) => [t.symbol, t.markPrice])).toEqual(runtime.book.positions.map((p: any) => [p.symbol, p.price]));
    const sum = (f: (t: any) => number) => list.reduce((a: number, t: any) => a + f(t), 0);
    expect(sum((t) => t.netPnlUsd)).toBeCloseTo(runtime.book.pnlUsd, 6);
    expect(sum((t) => t.feesUsd)).toBeCloseTo(runtime.book.feesUsd, 6);
    const executions = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=100`, token)).body.data;
    expect(executions.filter((e: any) => e.order?.status === 'filled')).toHaveLength(runtime.book.trades);

    const csv = await h.app.origins.api!.inject({ method: 'GET', url: `/agentic-trading/runtimes/${runtimeId}/trades.csv`, headers: { authorization: `Bearer ${token}` } });
    expect(csv.statusCode).toBe(200);
    expect(parseCsv(csv.body).map((row) => Number(row.net_pnl_usd))).toEqual(list.map((t: any) => t.netPnlUsd));

    const mallory = await h.app.identityToken('mallory');
    expect(await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades`, mallory)).toMatchObject({ status: 404, body: { data: { reason: 'runtime_not_found' } } });
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades.csv`, mallory)).status).toBe(404);
    expect((await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades`, null)).status).toBe(401);
  });
});
