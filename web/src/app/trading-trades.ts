// What a runtime did, for the trading page (trading.ts): the prices its ticks read with its entries and exits
// marked (uPlot), its trades after fees, each open position's P&L, and why an execution was blocked (the limit,
// its value and the limit's value). The numbers are the API's (GET .../trades, .../executions): nothing is
// recomputed here but a position's unrealized P&L (quantity × price moved).
import uPlot from 'uplot';
import { dataTable, h } from '../shared/dom.js';
import { when } from '../shared/format.js';

export interface Trade {
  symbol: string;
  side: 'long' | 'short';
  status: 'open' | 'closed';
  entryAt: string;
  entryPrice: number;
  exitAt: string | null;
  exitPrice: number | null;
  size: string;
  feesUsd: number;
  netPnlUsd: number;
  exitReason: string | null;
}

export interface PricedExecution {
  scheduledAt: string;
  status: string;
  decision: { kind?: string; symbol?: string | null; price?: number; signals?: Array<{ symbol: string; price: number }> } | null;
  riskAssessment: { checks?: Array<{ name: string; value: number; limit: number; ok: boolean }>; breaches?: string[]; killSwitch?: string; outcome?: string } | null;
  order: { symbol: string; referencePrice?: number; price: number | null } | null;
}

export interface HeldPosition {
  symbol: string;
  qty: number;
  avgPrice: number;
  price: number;
  stopLoss?: number;
  takeProfit?: number;
}

/** Price charts drawn at most (one per symbol, the most traded first). */
const MAX_CHARTS = 3;
const TRADES_SHOWN = 20;

export const dollars = (n: number) => n.toLocaleString('en-US', { style: 'currency', currency: 'USD' });
const signedDollars = (n: number) => `${n > 0 ? '+' : ''}${dollars(n)}`;

/**
 * Why a blocked or halted execution placed nothing, naming the limit: each check that failed with its value and
 * its limit (drawdown and leverage as the runtime's limits are written; exposure limits in USD).
 */
export function riskText(execution: PricedExecution): string {
  const risk = execution.riskAssessment;
  if (execution.status === 'halted') return `halted by the kill switch (${risk?.killSwitch ?? 'on'})`;
  const failed = (risk?.checks ?? []).filter((c) => !c.ok);
  if (execution.status !== 'blocked' || failed.length === 0) return risk?.outcome ?? '—';
  const said = failed.map((c) => {
    if (c.name === 'drawdown') return `drawdown ${c.value.toFixed(2)} % ≥ limit ${c.limit} %`;
    if (c.name === 'leverage') return `leverage ${c.value.toFixed(2)}× > limit ${c.limit}×`;
    return `${c.name} ${dollars(c.value)} > limit ${dollars(c.limit)}`;
  });
  return `blocked by ${said.join('; ')}`;
}

/** Each open position with its unrealized P&L and its trade's P&L after fees (entry fees and any part closed). */
export function positionsTable(name: string, positions: HeldPosition[], trades: Trade[]): HTMLElement {
  if (positions.length === 0) return h('p', { class: 'muted' }, 'No open position.');
  const open = new Map(trades.filter((t) => t.status === 'open').map((t) => [t.symbol, t]));
  return dataTable(
    ['Symbol', 'Quantity', 'Average price', 'Price', 'Unrealized P&L', 'Trade P&L after fees', 'Stop-loss', 'Take-profit'],
    positions.map((p) => {
      const trade = open.get(p.symbol);
      return {
        attrs: { 'data-symbol': p.symbol },
        cells: [p.symbol, String(p.qty), dollars(p.avgPrice), dollars(p.price), signedDollars(p.qty * (p.price - p.avgPrice)), trade ? signedDollars(trade.netPnlUsd) : '—', p.stopLoss ? dollars(p.stopLoss) : '—', p.takeProfit ? dollars(p.takeProfit) : '—'],
      };
    }),
    `Open positions of ${name}`,
  );
}

/** The runtime's latest trades, newest first, after fees. */
export function tradesTable(name: string, trades: Trade[]): HTMLElement {
  if (trades.length === 0) return h('p', { class: 'muted' }, 'No trades yet.');
  const latest = [...trades].reverse().slice(0, TRADES_SHOWN);
  return dataTable(
    ['Symbol', 'Side', 'Entry', 'Exit', 'Size', 'Fees', 'P&L after fees', 'Exit reason'],
    latest.map((t) => ({
      attrs: { 'data-status': t.status },
      cells: [
        t.symbol,
        t.side,
        `${when(t.entryAt)} at ${dollars(t.entryPrice)}`,
        t.exitAt && t.exitPrice !== null ? `${when(t.exitAt)} at ${dollars(t.exitPrice)}` : 'open',
        t.size,
        dollars(t.feesUsd),
        h('span', { class: t.netPnlUsd >= 0 ? 'gain' : 'loss' }, signedDollars(t.netPnlUsd)),
        t.exitReason ?? '—',
      ],
    })),
    `Trades of ${name}`,
  );
}

/** The prices each tick read, per symbol, from its decision (signals, an exit's price) or its order. */
function pricesOf(executions: PricedExecution[]): Map<string, Map<number, number>> {
  const bySymbol = new Map<string, Map<number, number>>();
  const put = (symbol: string, t: number, price: number | null | undefined) => {
    if (typeof price !== 'number' || !Number.isFinite(price)) return;
    if (!bySymbol.has(symbol)) bySymbol.set(symbol, new Map());
    bySymbol.get(symbol)!.set(t, price);
  };
  for (const e of executions) {
    const t = Date.parse(e.scheduledAt) / 1000;
    for (const s of e.decision?.signals ?? []) put(s.symbol, t, s.price);
    if (e.decision?.kind === 'exit' && e.decision.symbol) put(e.decision.symbol, t, e.decision.price);
    if (e.order) put(e.order.symbol, t, e.order.referencePrice ?? e.order.price);
  }
  return bySymbol;
}

/**
 * A price chart per symbol over the executions shown (oldest to newest), the trades' entries (▲) and exits (▼)
 * marked where they filled. The figure says how many of each it marks (data-entries, data-exits) for readers
 * that cannot see the canvas, and a caption says what the marks are.
 */
export function priceCharts(name: string, executions: PricedExecution[], trades: Trade[]): HTMLElement[] {
  const prices = pricesOf(executions);
  const traded = (symbol: string) => trades.filter((t) => t.symbol === symbol).length;
  const symbols = [...prices.keys()].sort((a, b) => traded(b) - traded(a) || a.localeCompare(b)).slice(0, MAX_CHARTS);
  return symbols.flatMap((symbol) => {
    const series = prices.get(symbol)!;
    const times = [...series.keys()];
    if (times.length < 2) return [];
    const [from, to] = [Math.min(...times), Math.max(...times)];
    const inside = (iso: string | null) => (iso ? Date.parse(iso) / 1000 : NaN);
    const entries = new Map<number, number>();
    const exits = new Map<number, number>();
    for (const t of trades.filter((x) => x.symbol === symbol)) {
      const at = inside(t.entryAt);
      if (at >= from && at <= to) entries.set(at, t.entryPrice);
      const out = inside(t.exitAt);
      if (t.exitPrice !== null && out >= from && out <= to) exits.set(out, t.exitPrice);
    }
    const xs = [...new Set([...times, ...entries.keys(), ...exits.keys()])].sort((a, b) => a - b);
    const column = (values: Map<number, number>) => xs.map((x) => values.get(x) ?? null);
    const figure = h('figure', { class: 'prices', role: 'img', 'aria-label': `Prices of ${symbol} in ${name}, ${entries.size} entries and ${exits.size} exits marked`, 'data-symbol': symbol, 'data-entries': entries.size, 'data-exits': exits.size });
    const marks = (label: string, color: string) => ({ label, stroke: color, fill: color, width: 0, paths: () => null, points: { show: true, size: 10, fill: color, stroke: color } });
    requestAnimationFrame(() => {
      const width = Math.max(figure.clientWidth, 320);
      new uPlot(
        {
          width,
          height: 200,
          scales: { x: { time: true } },
          series: [{}, { label: `${symbol} (USD)`, stroke: '#2563eb', width: 1.5, spanGaps: true }, marks('Entries ▲', '#16a34a'), marks('Exits ▼', '#dc2626')],
          axes: [{}, { size: 80 }],
        },
        [xs, column(series), column(entries), column(exits)],
        figure,
      );
    });
    return [figure, h('p', { class: 'muted' }, `${symbol}: the price each tick read; green marks are entries, red marks exits, at their fill prices.`)];
  });
}
