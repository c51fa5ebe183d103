import type { z } from 'zod';
import type { Clock } from '../../platform/clock.js';
import { nextTick } from '../events/cron.js';
import { markToMarket, openBook, qtyOf, type Book } from './book.js';
import { dec } from './money.js';
import { backtestReport, equityCurve, type EquityPoint } from './backtest-report.js';
import type { Catalog } from './catalog.js';
import { ModelCallLimit, type AgentDeciders } from './agent-decider.js';
import { evaluateTick, type OrderSummary, type RiskLimits, type StrategyKind } from './engine.js';
import { DEFAULT_LOOKBACK, type LlmAgentDefinition } from './llm-agent.js';
import { tradingErrors } from './errors.js';
import { CANDLE_INTERVALS, lastClosedStart, type MarketDataProvider } from './market-data.js';
import { candlesRead, type QuantSignalDefinition } from './quant-signal.js';
import { utcCron } from './schedules.js';
import { TRADING_LIMITS, type backtestBody, type backtestResult } from './schemas.js';
import type { VersionRow } from './store.js';
import type { PaperVenue } from './venue.js';
import { bookView } from './views.js';

/** Ticks replayed between yields to the event loop. */
const YIELD_EVERY = 50;

/**
 * Replays a strategy version over the feed with the code path of live ticks (evaluateTick), from a fresh
 * book of `fundLimitUsd`, tick by tick of the cron in [from, to]. A runtime that ran the same ticks with
 * the same limits, and no manual runs, kill switch or pauses in between, made the same decisions with
 * the same input digests. A breach stops the replay where a runtime would have gone to review.
 */
export class Backtester {
  constructor(
    private readonly catalog: Catalog,
    private readonly feedFor: (version: VersionRow) => MarketDataProvider,
    /** Paper, always: a replay never places a real order. */
    private readonly venue: PaperVenue,
    private readonly agents: AgentDeciders,
    private readonly clock: Clock,
  ) {}

  async run(userId: string, strategyId: string, input: z.infer<typeof backtestBody>, signal?: AbortSignal): Promise<z.infer<typeof backtestResult>> {
    const strategy = await this.catalog.visibleStrategy(userId, strategyId);
    const versions = await this.catalog.store.versions([strategy.id]);
    const version = input.versionId ? versions.find((v) => v.id === input.versionId) : versions.find((v) => v.number === strategy.latestVersion);
    if (!version) throw tradingErrors.versionNotFound();
    const ticks = this.ticksOf(input);
    const kind = version.kind as StrategyKind;
    const definition = version.definition as QuantSignalDefinition | LlmAgentDefinition;
    const perTick = kind === 'llm_agent' ? ((definition as LlmAgentDefinition).lookback ?? DEFAULT_LOOKBACK) : candlesRead(definition as QuantSignalDefinition);
    this.checkWork(definition, perTick, ticks, input);
    await this.checkCoverage(this.feedFor(version), definition, perTick, ticks);

    const limits: RiskLimits = { fundLimitUsd: input.fundLimitUsd, maxLeverage: input.maxLeverage, maxDrawdownPercent: input.maxDrawdownPercent };
    const agent = kind === 'llm_agent' ? await this.agentFor(userId, input) : undefined;
    const parts = { feed: this.feedFor(version), venue: this.venue, agent };
    let book = openBook(input.fundLimitUsd);
    let stoppedAt: string | null = null;
    let stopReason: 'risk_breach' | 'max_model_calls' | null = null;
    const executions = [];
    const series: EquityPoint[] = [];
    const closes: number[] = [];
    for (const [i, at] of ticks.entries()) {
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise((resolve) => setImmediate(resolve)); // let the api's other requests run
      signal?.throwIfAborted();
      let outcome;
      try {
        outcome = await evaluateTick({ version: { id: version.id, contentHash: version.contentHash, kind, definition }, limits, book, killSwitch: 'off', at }, parts);
      } catch (error) {
        if (!(error instanceof ModelCallLimit)) throw error;
        [stoppedAt, stopReason] = [at.toISOString(), 'max_model_calls'];
        break;
      }
      executions.push({ scheduledAt: at.toISOString(), status: outcome.status, inputsDigest: outcome.inputsDigest, decision: outcome.decision, riskAssessment: outcome.riskAssessment, order: outcome.order });
      if (outcome.order?.status === 'filled' && closesPosition(book, outcome.order)) closes.push(dec(outcome.book.realizedPnlUsd).minus(book.realizedPnlUsd).toNumber());
      book = outcome.book;
      series.push({ at: at.toISOString(), equityUsd: markToMarket(book, outcome.prices).equityUsd, exposed: Object.keys(book.positions).length > 0 });
      if (outcome.breaches.length) {
        [stoppedAt, stopReason] = [at.toISOString(), 'risk_breach'];
        break;
      }
    }
    const end = new Date(input.to);
    const prices = Object.fromEntries(await Promise.all(Object.keys(book.positions).map(async (s) => [s, await parts.feed.price(s, end)] as const)));
    const finalBook = bookView(book, prices, end);
    const report = backtestReport({ startEquityUsd: input.fundLimitUsd, endEquityUsd: finalBook.equityUsd, series, closes, trades: book.trades, feesUsd: finalBook.feesUsd, windowMs: end.getTime() - Date.parse(input.from) });
    const page = executions.slice(input.executionsOffset, input.executionsOffset + input.executionsLimit);
    return { strategyVersionId: version.id, strategyVersionHash: version.contentHash, ticks: ticks.length, stoppedAt, stopReason, modelCalls: agent?.modelCalls ?? 0, report, equityCurve: equityCurve(series), executionsTotal: executions.length, executions: page, book: finalBook };
  }

  /**
   * Refuses a replay whose work is past the limits: candle reads (ticks × symbols × slow), and the minute
   * prices behind the distinct candles read (consecutive ticks share candles; a 1d candle is 1,440 prices).
   */
  private checkWork(definition: { universe: string[]; candleInterval: string }, slow: number, ticks: Date[], input: z.infer<typeof backtestBody>): void {
    const symbols = definition.universe.length;
    const reads = ticks.length * symbols * slow;
    if (reads > TRADING_LIMITS.backtestCandleReads) {
      throw tradingErrors.invalidWindow(`ticks × symbols × slow is ${reads}, above ${TRADING_LIMITS.backtestCandleReads}: shorten the window or use a sparser cron`);
    }
    const interval = CANDLE_INTERVALS[definition.candleInterval]!;
    const windowCandles = Math.ceil((Date.parse(input.to) - Date.parse(input.from)) / 60_000 / interval) + slow;
    const prices = symbols * Math.min(ticks.length * slow, windowCandles) * interval;
    if (prices > TRADING_LIMITS.backtestPrices) {
      throw tradingErrors.invalidWindow(`the window's candles take ${prices} minute prices, above ${TRADING_LIMITS.backtestPrices}: shorten the window, or use fewer symbols or a shorter candleInterval`);
    }
  }

  /** A feed with holes must hold every candle the replay reads: else 422 naming the first one missing. */
  private async checkCoverage(feed: MarketDataProvider, definition: { universe: string[]; candleInterval: string }, slow: number, ticks: Date[]): Promise<void> {
    if (!feed.gap || ticks.length === 0) return;
    const interval = CANDLE_INTERVALS[definition.candleInterval]!;
    // The candles the ticks read (each tick its last `slow` closed ones), as merged runs: a sparse cron over a
    // fine interval reads a small part of the window, and only that part must be there.
    const ranges: Array<{ from: number; to: number }> = [];
    for (const tick of ticks) {
      const to = lastClosedStart(tick, interval);
      const from = to - (slow - 1) * interval;
      const last = ranges.at(-1);
      if (last && from <= last.to + interval) last.to = Math.max(last.to, to);
      else ranges.push({ from, to });
    }
    const asDates = ranges.map((r) => ({ from: new Date(r.from * 60_000), to: new Date(r.to * 60_000) }));
    const [needFrom, needTo] = [asDates[0]!.from.toISOString(), asDates.at(-1)!.to.toISOString()];
    for (const symbol of definition.universe) {
      const gap = await feed.gap(symbol, interval, asDates);
      if (gap) throw tradingErrors.marketDataGap({ source: feed.name, symbol, interval: definition.candleInterval, needFrom, needTo, firstMissing: gap.first.toISOString(), missing: gap.missing });
    }
  }

  /** An llm_agent's backtest calls its model with the caller's account key, at most maxModelCalls times. */
  private async agentFor(userId: string, input: z.infer<typeof backtestBody>) {
    if (!input.accountId || input.maxModelCalls === undefined) throw tradingErrors.invalidBacktest("an llm_agent's backtest names the accountId whose provider key pays its model calls, and maxModelCalls");
    await this.catalog.account(userId, input.accountId);
    return this.agents.forAccount(input.accountId, input.maxModelCalls);
  }

  /** The cron's ticks in [from, to], UTC; the window must be in the past and hold at most TRADING_LIMITS.backtestTicks. */
  private ticksOf(input: z.infer<typeof backtestBody>): Date[] {
    const from = new Date(input.from);
    const to = new Date(input.to);
    if (from >= to) throw tradingErrors.invalidWindow('from must be before to');
    if (to > this.clock.now()) throw tradingErrors.invalidWindow('to must not be in the future: the feed has no candles there yet');
    const cron = utcCron(input.cronExpression);
    const ticks: Date[] = [];
    for (let tick = nextTick(cron, new Date(from.getTime() - 1)); tick && tick <= to; tick = nextTick(cron, tick)) {
      if (ticks.length === TRADING_LIMITS.backtestTicks) throw tradingErrors.invalidWindow(`the window holds more than ${TRADING_LIMITS.backtestTicks} ticks`);
      ticks.push(tick);
    }
    return ticks;
  }
}

/** Whether the order closes (part of) a position the book holds: what a closed trade's PnL is counted from. */
function closesPosition(book: Book, order: OrderSummary): boolean {
  const held = qtyOf(book.positions[order.symbol]);
  return held !== 0 && (order.side === 'buy') === held < 0;
}
