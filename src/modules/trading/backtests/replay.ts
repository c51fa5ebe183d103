// The replay loop every backtest runs (an answered one, a background job, each trial of an optimisation): the
// live tick code (evaluateTick) tick by tick from a book, and what a replay reports once it ends. Its state is
// plain data, so a background job can save it between ticks and resume from it (backtest-jobs.ts).
import { markToMarket, openBook, type Book } from '../engine/book.js';
import { backtestReport, equityCurve, type BacktestReport, type EquityPoint } from './backtest-report.js';
import { ModelCallLimit } from '../strategies/agent-decider.js';
import { evaluateTick, type OrderSummary, type RiskLimits, type TickInput, type TickLeg, type TickParts } from '../engine/engine.js';
import { tradeList, reasonOf, type Trade, type TradeFill } from './trade-list.js';
import type { Venue } from '../venues/venue.js';
import { bookView } from '../views.js';

/** Ticks replayed between yields to the event loop. */
const YIELD_EVERY = 50;

export type StopReason = 'risk_breach' | 'max_model_calls';

/** What a replay needs: the version, its limits, the ticks, and the feed and (paper) venue it reads and fills on. */
export interface ReplaySetup {
  version: TickInput['version'];
  limits: RiskLimits;
  ticks: readonly Date[];
  parts: TickParts & { venue: Venue };
}

/** Where a replay stands: everything its report is made of. Plain JSON, so a job saves it as it goes. */
export interface ReplayState {
  /** Ticks run so far: the index of the next one. */
  next: number;
  book: Book;
  series: EquityPoint[];
  fills: TradeFill[];
  executionsTotal: number;
  stoppedAt: string | null;
  stopReason: StopReason | null;
}

/** One tick's execution as a backtest answers it. */
export interface ReplayExecution {
  scheduledAt: string;
  status: TickLeg['status'];
  inputsDigest: string;
  decision: Record<string, unknown>;
  riskAssessment: Record<string, unknown>;
  order: OrderSummary | null;
}

export const startState = (fundLimitUsd: number): ReplayState => ({ next: 0, book: openBook(fundLimitUsd), series: [], fills: [], executionsTotal: 0, stoppedAt: null, stopReason: null });

/** Whether the replay has nothing left to run: every tick run, or stopped. */
export const finished = (setup: Pick<ReplaySetup, 'ticks'>, state: ReplayState) => state.stopReason !== null || state.next >= setup.ticks.length;

/**
 * Runs the ticks from `state.next` to the end, or to a stop where a runtime would have stopped (a breach: it goes
 * to review; an llm_agent past its model calls), moving `state` tick by tick. `onExecution` sees each execution;
 * `checkpoint` is called every `every` ticks with the state (a job saves it there, and its answer may stop the run:
 * false ends the replay where it stands, resumable). Yields to the event loop every 50 ticks.
 */
export async function replayTicks(
  setup: ReplaySetup,
  state: ReplayState,
  options: { signal?: AbortSignal; onExecution?: (execution: ReplayExecution, index: number) => void; checkpoint?: { every: number; save: (state: ReplayState) => Promise<boolean> } } = {},
): Promise<ReplayState> {
  const { version, limits, ticks, parts } = setup;
  while (!finished(setup, state)) {
    const i = state.next;
    const at = ticks[i]!;
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve)); // let the api's other requests run
    options.signal?.throwIfAborted();
    let outcome;
    try {
      outcome = await evaluateTick({ version, limits, book: state.book, killSwitch: 'off', at }, parts);
    } catch (error) {
      if (!(error instanceof ModelCallLimit)) throw error;
      [state.stoppedAt, state.stopReason] = [at.toISOString(), 'max_model_calls'];
      break;
    }
    // One execution per order the tick decided (its legs, in the order they were placed), one when it decided none.
    for (const leg of outcome.legs) {
      options.onExecution?.({ scheduledAt: at.toISOString(), status: leg.status, inputsDigest: leg.inputsDigest, decision: leg.decision, riskAssessment: leg.riskAssessment, order: leg.order }, state.executionsTotal);
      state.executionsTotal += 1;
      const order = leg.order;
      if (order?.status === 'filled') state.fills.push({ at: at.toISOString(), symbol: order.symbol, side: order.side, size: order.size, price: order.price!, feeUsd: order.feeUsd!, reason: reasonOf(leg.decision) });
    }
    state.book = outcome.book;
    state.series.push({ at: at.toISOString(), equityUsd: markToMarket(state.book, outcome.prices).equityUsd, exposed: Object.keys(state.book.positions).length > 0 });
    state.next = i + 1;
    if (outcome.breaches.length) [state.stoppedAt, state.stopReason] = [at.toISOString(), 'risk_breach'];
    const every = options.checkpoint?.every ?? 0;
    if (every > 0 && state.next % every === 0 && !finished(setup, state) && !(await options.checkpoint!.save(state))) break;
  }
  return state;
}

/** What a replay reports: the book marked at `to`, the report (net of fees), the equity curve and the trade list. */
export interface ReplayOutcome {
  report: BacktestReport;
  equityCurve: Array<{ at: string; equityUsd: number }>;
  trades: Trade[];
  book: ReturnType<typeof bookView>;
}

export async function replayOutcome(setup: ReplaySetup, state: ReplayState, from: Date, to: Date): Promise<ReplayOutcome> {
  const held = Object.keys(state.book.positions);
  const prices = Object.fromEntries(await Promise.all(held.map(async (s) => [s, await setup.parts.feed.price(s, to)] as const)));
  const book = bookView(state.book, prices, to);
  const trades = tradeList(state.fills, prices);
  const closes = trades.filter((t) => t.status === 'closed').map((t) => t.netPnlUsd);
  const report = backtestReport({ startEquityUsd: setup.limits.fundLimitUsd, endEquityUsd: book.equityUsd, series: state.series, closes, trades: state.book.trades, feesUsd: book.feesUsd, windowMs: to.getTime() - from.getTime() });
  return { report, equityCurve: equityCurve(state.series), trades, book };
}
