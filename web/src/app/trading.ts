// The user's trading runtimes (docs/trading.md): each one's book, its equity over its recent ticks, the prices
// it read with its entries and exits marked, its trades after fees, its executions page by page (a blocked one
// naming its limit), and the controls that protect it: pause, resume, flatten (close every position), and each
// account's kill switch (halt, reduce only, release).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { dataTable, h, lazyPanel, mount, notice } from '../shared/dom.js';
import { when } from '../shared/format.js';
import { json } from '../shared/http.js';
import { session } from './session.js';
import { dollars, positionsTable, priceCharts, riskText, tradesTable, type HeldPosition, type PricedExecution, type Trade } from './trading-trades.js';

interface Book { cashUsd: number; equityUsd: number; pnlUsd: number; drawdownPercent: number; trades: number; positions: HeldPosition[]; markedAt: string }
interface Runtime { id: string; name: string; accountId: string; status: string; statusReason: string | null; fundLimitUsd: number; book: Book; createdAt: string }
interface Account { id: string; name: string; killSwitch: 'off' | 'halt' | 'reduce_only' }
interface Order { symbol: string; side: string; size: string; status: string; price: number | null; referencePrice?: number }
interface Execution extends PricedExecution {
  id: string;
  triggerType: string;
  decision: (PricedExecution['decision'] & { action?: string; outcome?: string }) | null;
  riskAssessment: (PricedExecution['riskAssessment'] & { equityUsd?: number }) | null;
  order: Order | null;
  error: { message: string } | null;
}

/** Executions per page, and the ticks the equity curve covers. */
const PAGE = 20;
const CURVE_TICKS = 100;
const OPEN_PANELS = 3;

/** What a control said about a runtime, shown once its panel is drawn again (the page reloads after each action). */
const said = new Map<string, string>();

const api = <T>(method: string, path: string, body?: unknown) => json<{ data: T }>(method, path, { token: session.token, body }).then((r) => r.data);
/** What the kill switch does in each mode, as its buttons and notices say it. */
const KILL_SWITCH: Record<Account['killSwitch'], string> = { off: 'off', halt: 'halt: no order is placed', reduce_only: 'reduce only: only orders that shrink a position are placed' };

export async function tradingPage(root: HTMLElement): Promise<void> {
  const [runtimes, accounts] = await Promise.all([api<Runtime[]>('GET', '/agentic-trading/runtimes?limit=100'), api<Account[]>('GET', '/agentic-trading/accounts?limit=100')]);
  const accountOf = new Map(accounts.map((a) => [a.id, a]));
  mount(
    root,
    h('h1', {}, 'Trading'),
    accounts.length ? accountsCard(root, accounts) : null,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'runtimes' },
      h('h2', { id: 'runtimes' }, 'Runtimes'),
      runtimes.length === 0
        ? h('p', {}, 'No runtimes yet: launch one with POST /agentic-trading/runtimes (docs/trading.md).')
        : dataTable(
            ['Name', 'Status', 'Equity', 'P&L', 'Drawdown', 'Trades', 'Created'],
            runtimes.map((r) => ({
              attrs: { 'data-runtime-id': r.id },
              cells: [r.name, h('span', { class: `badge ${r.status}` }, r.status), dollars(r.book.equityUsd), dollars(r.book.pnlUsd), `${r.book.drawdownPercent.toFixed(2)} %`, String(r.book.trades), when(r.createdAt)],
            })),
          ),
    ),
    runtimes.map((r) => runtimePanel(root, r, accountOf.get(r.accountId), runtimes.length <= OPEN_PANELS)),
  );
}

/** What the account's kill switch said last, shown once the page is drawn again. */
let killSwitchSaid: string | null = null;

/** Each account with its kill switch (every runtime of it, from the next tick) and the buttons that move it. */
function accountsCard(root: HTMLElement, accounts: Account[]): HTMLElement {
  const feedback = h('div', { 'data-slot': 'feedback' });
  if (killSwitchSaid) mount(feedback, notice('success', killSwitchSaid));
  killSwitchSaid = null;
  const button = (account: Account, mode: Account['killSwitch'], label: string, danger: boolean) =>
    h(
      'button',
      {
        type: 'button',
        class: danger ? 'danger' : 'secondary',
        'aria-label': `${label} (${account.name})`,
        onclick: async (event: Event) => {
          if (mode === 'halt' && !confirm(`Halt every runtime of ${account.name}? Their ticks still run but place no order.`)) return;
          const clicked = event.currentTarget as HTMLButtonElement;
          clicked.disabled = true;
          try {
            await api<Account>('PUT', `/agentic-trading/accounts/${encodeURIComponent(account.id)}/kill-switch`, { mode });
            killSwitchSaid = `Kill switch of ${account.name}: ${KILL_SWITCH[mode]}.`;
            await tradingPage(root);
          } catch (error) {
            mount(feedback, notice('error', (error as Error).message));
            clicked.disabled = false;
          }
        },
      },
      label,
    );
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'accounts' },
    h('h2', { id: 'accounts' }, 'Accounts'),
    dataTable(
      ['Account', 'Kill switch', 'Controls'],
      accounts.map((a) => ({
        attrs: { 'data-account-id': a.id },
        cells: [
          a.name,
          h('span', { class: `badge ${a.killSwitch === 'off' ? 'active' : 'halted'}` }, a.killSwitch),
          h(
            'div',
            { class: 'inline' },
            a.killSwitch !== 'halt' ? button(a, 'halt', 'Halt trading', true) : null,
            a.killSwitch !== 'reduce_only' ? button(a, 'reduce_only', 'Reduce only', false) : null,
            a.killSwitch !== 'off' ? button(a, 'off', 'Release kill switch', false) : null,
          ),
        ],
      })),
      'Kill switches',
    ),
    feedback,
  );
}

/** One runtime: its positions, charts, trades, executions and controls; loads when first opened. */
function runtimePanel(root: HTMLElement, runtime: Runtime, account: Account | undefined, open: boolean): HTMLDetailsElement {
  const base = `/agentic-trading/runtimes/${encodeURIComponent(runtime.id)}`;
  const summary = [h('h2', {}, runtime.name), h('span', { class: `badge ${runtime.status}` }, runtime.status)];
  return lazyPanel({ class: 'card runtime', 'data-runtime-id': runtime.id }, summary, open, async (body) => {
    const [current, executions, trades] = await Promise.all([api<Runtime>('GET', base), api<Execution[]>('GET', `${base}/executions?limit=${CURVE_TICKS}`), api<Trade[]>('GET', `${base}/trades`)]);
    mount(
      body,
      account && account.killSwitch !== 'off' ? notice('info', `The kill switch of ${account.name} is on (${KILL_SWITCH[account.killSwitch]}).`) : null,
      controls(root, current, base),
      positionsTable(current.name, current.book.positions, trades),
      equityChart(current, executions),
      priceCharts(current.name, [...executions].reverse(), trades),
      tradesTable(current.name, trades),
      executionsSection(current, base, executions.slice(0, PAGE)),
    );
  }).details;
}

/** Pause or resume, and flatten; each answer shown, then the page read again. */
function controls(root: HTMLElement, runtime: Runtime, base: string): HTMLElement {
  const feedback = h('div', { 'data-slot': 'feedback' });
  const last = said.get(runtime.id);
  said.delete(runtime.id);
  if (last) mount(feedback, notice('success', last));
  const act = (label: string, run: () => Promise<string>, confirmText?: string) =>
    h(
      'button',
      {
        type: 'button',
        class: label === 'Flatten' ? 'danger' : 'secondary',
        onclick: async (event: Event) => {
          if (confirmText && !confirm(confirmText)) return;
          const button = event.currentTarget as HTMLButtonElement;
          button.disabled = true;
          try {
            said.set(runtime.id, await run());
            await tradingPage(root);
          } catch (error) {
            mount(feedback, notice('error', (error as Error).message));
            button.disabled = false;
          }
        },
      },
      label,
    );
  const move = (status: string) => async () => (await api<Runtime>('PATCH', `${base}/status`, { status }), `${runtime.name} is ${status === 'active' ? 'active again' : status}.`);
  const flatten = async () => {
    const result = await api<{ executions: Execution[]; runtime: Runtime }>('POST', `${base}/flatten`);
    const left = result.runtime.book.positions.length;
    return `Flatten placed ${result.executions.length} order(s); ${left === 0 ? 'no position is left' : `${left} position(s) left (see the executions)`}.`;
  };
  const buttons = [];
  if (runtime.status === 'active' || runtime.status === 'needs_review') buttons.push(act('Pause', move('paused')));
  if (runtime.status === 'paused') buttons.push(act('Resume', move('active')));
  if (['active', 'paused', 'needs_review'].includes(runtime.status) && runtime.book.positions.length > 0) {
    buttons.push(act('Flatten', flatten, `Close every position of ${runtime.name} now, at market?`));
  }
  return h(
    'div',
    { class: 'controls' },
    runtime.statusReason ? notice('info', runtime.statusReason) : null,
    h('p', {}, `Cash ${dollars(runtime.book.cashUsd)} · equity ${dollars(runtime.book.equityUsd)} · fund limit ${dollars(runtime.fundLimitUsd)}`),
    h('div', { class: 'inline' }, buttons),
    feedback,
  );
}

/** Equity before each recent tick (its risk assessment's), then as the book is marked now: uPlot draws it. */
function equityChart(runtime: Runtime, executions: Execution[]): HTMLElement {
  const points = executions
    .filter((e) => typeof e.riskAssessment?.equityUsd === 'number')
    .map((e) => [Date.parse(e.scheduledAt) / 1000, e.riskAssessment!.equityUsd!] as const)
    .reverse();
  points.push([Date.parse(runtime.book.markedAt) / 1000, runtime.book.equityUsd]);
  const holder = h('figure', { class: 'equity', role: 'img', 'aria-label': `Equity curve of ${runtime.name}` });
  if (points.length < 2) return h('p', { class: 'muted' }, 'The equity curve appears after the first ticks.');
  // Drawn once the element is in the page, at its width.
  requestAnimationFrame(() => {
    const width = Math.max(holder.clientWidth, 320);
    new uPlot(
      { width, height: 200, scales: { x: { time: true } }, series: [{}, { label: 'Equity (USD)', stroke: '#2563eb', width: 2 }], axes: [{}, { size: 70 }] },
      [points.map((p) => p[0]), points.map((p) => p[1])],
      holder,
    );
  });
  return holder;
}

/** Executions, newest first, a page at a time (`before` the last one shown). */
function executionsSection(runtime: Runtime, base: string, first: Execution[]): HTMLElement {
  const table = h('div');
  const more = h('button', { type: 'button', class: 'secondary' }, 'Older executions');
  let shown = first;
  const render = () => {
    mount(
      table,
      shown.length === 0
        ? h('p', { class: 'muted' }, 'No executions yet.')
        : dataTable(
            ['Due', 'Trigger', 'Status', 'Decision', 'Order', 'Risk', 'Error'],
            shown.map((e) => ({
              attrs: { 'data-execution-id': e.id },
              cells: [
                when(e.scheduledAt),
                e.triggerType,
                h('span', { class: `badge ${e.status}` }, e.status),
                [e.decision?.kind, e.decision?.outcome, e.decision?.action].filter(Boolean).join(' · ') || '—',
                e.order ? `${e.order.side} ${e.order.size} ${e.order.symbol} ${e.order.status}${e.order.price ? ` at ${dollars(e.order.price)}` : ''}` : '—',
                riskText(e),
                e.error?.message ?? '—',
              ],
            })),
            `Executions of ${runtime.name}`,
          ),
    );
    more.hidden = shown.length === 0 || shown.length % PAGE !== 0;
  };
  more.onclick = async () => {
    more.disabled = true;
    const older = await api<Execution[]>('GET', `${base}/executions?limit=${PAGE}&before=${encodeURIComponent(shown.at(-1)!.id)}`);
    shown = [...shown, ...older];
    if (older.length < PAGE) more.hidden = true;
    more.disabled = false;
    render();
    if (older.length < PAGE) more.hidden = true;
  };
  render();
  return h('section', { 'aria-label': `Executions of ${runtime.name}` }, table, more);
}
