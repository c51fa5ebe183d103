import type { z } from 'zod';
import type { Clock } from '../../../platform/clock.js';
import { nextTick } from '../../events/cron.js';
import { isPricedFor } from '../metering/access.js';
import type { Catalog } from '../catalog.js';
import type { AgentDeciders } from '../strategies/agent-decider.js';
import type { RiskLimits, StrategyKind } from '../engine/engine.js';
import { DEFAULT_LOOKBACK, type LlmAgentDefinition } from '../strategies/llm-agent.js';
import { tradingErrors } from '../errors.js';
import { CANDLE_INTERVALS, lastClosedStart, type MarketDataProvider } from '../data/market-data.js';
import { atomicOf, type Meter } from '../metering/metering.js';
import { MemoFeed, type BulkReads } from '../data/memo-feed.js';
import { candlesRead, type QuantSignalDefinition } from '../strategies/quant-signal.js';
import { replayOutcome, replayTicks, startState, type ReplayExecution, type ReplayOutcome, type ReplaySetup, type ReplayState } from './replay.js';
import { utcCron } from '../runtimes/schedules.js';
import type { backtestBody, backtestResult } from '../schemas/backtests.js';
import { TRADING_LIMITS } from '../schemas/common.js';
import type { StrategyRow, VersionRow } from '../store.js';
import type { PaperVenue } from '../venues/venue.js';
import { sealedDecision } from '../views.js';

/** The window, cron and limits of a replay (a backtest's body without its paging). */
export type ReplayInput = Omit<z.infer<typeof backtestBody>, 'executionsLimit' | 'executionsOffset' | 'tradeListLimit' | 'tradeListOffset'>;

/** A replay ready to run: the version it replays, its ticks and parts, checked and (another owner's priced strategy) paid for. */
export interface PreparedReplay {
  strategy: StrategyRow;
  version: VersionRow;
  /** Another owner's priced strategy: its decisions answer what it did, not why. */
  priced: boolean;
  setup: ReplaySetup;
  agent?: { modelCalls: number };
}

/** How much a replay may do: an answered backtest's limits, or a background job's (backtest-jobs.ts). */
export interface WorkLimits {
  ticks: number;
  candleReads: number;
  prices: number;
}
export const ANSWERED_WORK: WorkLimits = { ticks: TRADING_LIMITS.backtestTicks, candleReads: TRADING_LIMITS.backtestCandleReads, prices: TRADING_LIMITS.backtestPrices };

/**
 * Replays a strategy version over the feed with the code path of live ticks (evaluateTick), from a fresh
 * book of `fundLimitUsd`, tick by tick of the cron in [from, to]. A runtime that ran the same ticks with
 * the same limits, and no manual runs, kill switch or pauses in between, made the same decisions with
 * the same input digests. A breach stops the replay where a runtime would have gone to review. Another
 * owner's priced strategy is replayed only once the caller's account has paid its access, and its
 * decisions answer what it did, not why (sealedDecision).
 */
export class Backtester {
  constructor(
    private readonly catalog: Catalog,
    private readonly feedFor: (version: VersionRow) => MarketDataProvider,
    /** Paper, always: a replay never places a real order. */
    private readonly venue: PaperVenue,
    private readonly agents: AgentDeciders,
    private readonly meter: Meter,
    private readonly clock: Clock,
  ) {}

  async run(userId: string, strategyId: string, input: z.infer<typeof backtestBody>, signal?: AbortSignal): Promise<z.infer<typeof backtestResult>> {
    const prepared = await this.prepare(userId, strategyId, input);
    const state = startState(input.fundLimitUsd);
    // Only the page asked for is kept: a week of minute ticks is 13 MB of executions.
    const page: ReplayExecution[] = [];
    const [offset, limit] = [input.executionsOffset, input.executionsLimit];
    await replayTicks(prepared.setup, state, { signal, onExecution: (e, i) => i >= offset && i < offset + limit && page.push(e) });
    const outcome = await replayOutcome(prepared.setup, state, new Date(input.from), new Date(input.to));
    return { ...this.answer(prepared, state, outcome, page), tradeList: outcome.trades.slice(input.tradeListOffset, input.tradeListOffset + input.tradeListLimit) };
  }

  /** Every trade of the replay, for the CSV: the same replay as `run`, without its executions. */
  async trades(userId: string, strategyId: string, input: ReplayInput, signal?: AbortSignal): Promise<ReplayOutcome['trades']> {
    const prepared = await this.prepare(userId, strategyId, input);
    const state = await replayTicks(prepared.setup, startState(input.fundLimitUsd), { signal });
    return (await replayOutcome(prepared.setup, state, new Date(input.from), new Date(input.to))).trades;
  }

  /** A replay's answer but for its trade list's page: what `run` and a finished job answer. */
  answer(prepared: PreparedReplay, state: ReplayState, outcome: ReplayOutcome, page: ReplayExecution[]): Omit<z.infer<typeof backtestResult>, 'tradeList'> {
    const { version, setup } = prepared;
    return {
      strategyVersionId: version.id,
      strategyVersionHash: version.contentHash,
      ticks: setup.ticks.length,
      stoppedAt: state.stoppedAt,
      stopReason: state.stopReason,
      modelCalls: prepared.agent?.modelCalls ?? 0,
      report: outcome.report,
      equityCurve: outcome.equityCurve,
      executionsTotal: state.executionsTotal,
      executions: page.map((e) => (prepared.priced ? { ...e, decision: sealedDecision(e.decision) } : e)),
      tradeListTotal: outcome.trades.length,
      book: outcome.book,
    };
  }

  /**
   * The version a replay runs and its ticks, checked; `definition` replaces the version's (an optimisation's
   * trial: the caller reads the definition). Another owner's priced strategy pays its access here.
   */
  async prepare(userId: string, strategyId: string, input: ReplayInput, work: WorkLimits = ANSWERED_WORK, definitionFor?: (version: VersionRow) => QuantSignalDefinition): Promise<PreparedReplay> {
    const strategy = await this.catalog.visibleStrategy(userId, strategyId);
    const versions = await this.catalog.store.versions([strategy.id]);
    const version = input.versionId ? versions.find((v) => v.id === input.versionId) : versions.find((v) => v.number === strategy.latestVersion);
    if (!version) throw tradingErrors.versionNotFound();
    // The order matters. First what reads nothing of the definition (the window and its cron); then, for
    // another owner's priced strategy, its access paid from the caller's account; only then what reads the
    // definition (the work it makes, the candles it needs), whose refusals would otherwise tell a caller who
    // has not paid its parameters (a window grown until it is refused gives `slow` away).
    const ticks = this.ticksOf(input, work.ticks);
    const priced = isPricedFor(strategy, userId);
    if (priced) await this.payAccess(userId, strategy, input);
    const kind = version.kind as StrategyKind;
    const definition = definitionFor ? definitionFor(version) : (version.definition as QuantSignalDefinition | LlmAgentDefinition);
    const perTick = kind === 'llm_agent' ? ((definition as LlmAgentDefinition).lookback ?? DEFAULT_LOOKBACK) : candlesRead(definition as QuantSignalDefinition);
    const feed = this.feedFor(version);
    // A live venue's own prices are the present only: nothing to replay (venue-feed.ts).
    if (feed.live) throw tradingErrors.invalidBacktest(`the ${feed.name} data source is the live venue's prices now, with no history to replay: backtest a version whose first data source is imported (or embedded)`);
    this.checkWork(definition, perTick, ticks, input, work);
    await this.checkCoverage(feed, definition, perTick, ticks);
    const limits: RiskLimits = { fundLimitUsd: input.fundLimitUsd, maxLeverage: input.maxLeverage, maxDrawdownPercent: input.maxDrawdownPercent };
    const agent = kind === 'llm_agent' ? await this.agentFor(userId, input) : undefined;
    const parts = { feed: await replayFeed(feed, definition, perTick, ticks), venue: this.venue, agent };
    const setup: ReplaySetup = { version: { id: version.id, contentHash: version.contentHash, kind, definition }, limits, ticks, parts };
    return { strategy, version, priced, setup, agent };
  }

  /**
   * Refuses a replay whose work is past the limits: candle reads (ticks × symbols × slow), and the minute
   * prices behind the distinct candles read (consecutive ticks share candles; a 1d candle is 1,440 prices).
   */
  private checkWork(definition: { universe: string[]; candleInterval: string }, slow: number, ticks: Date[], input: ReplayInput, work: WorkLimits): void {
    const symbols = definition.universe.length;
    const reads = ticks.length * symbols * slow;
    if (reads > work.candleReads) {
      throw tradingErrors.invalidWindow(`ticks × symbols × slow is ${reads}, above ${work.candleReads}: shorten the window or use a sparser cron`);
    }
    const interval = CANDLE_INTERVALS[definition.candleInterval]!;
    const windowCandles = Math.ceil((Date.parse(input.to) - Date.parse(input.from)) / 60_000 / interval) + slow;
    const prices = symbols * Math.min(ticks.length * slow, windowCandles) * interval;
    if (prices > work.prices) {
      throw tradingErrors.invalidWindow(`the window's candles take ${prices} minute prices, above ${work.prices}: shorten the window, or use fewer symbols or a shorter candleInterval`);
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

  /**
   * Another owner's priced strategy: the caller's consent to its price, then its access paid by the account's
   * agent wallet, once per account and strategy (a runtime's activation finds it paid, and the other way round).
   */
  private async payAccess(userId: string, strategy: StrategyRow, input: ReplayInput): Promise<void> {
    if (atomicOf(input.maxAccessPriceUsd ?? null, 6) < atomicOf(strategy.accessPriceUsd, 6)) throw tradingErrors.accessPriceNotAccepted(strategy.accessPriceUsd!);
    if (!input.accountId) throw tradingErrors.invalidBacktest("a backtest of another user's priced strategy names the accountId whose agent wallet pays its access");
    const account = await this.catalog.account(userId, input.accountId);
    const paid = await this.meter.forAccess({ accountId: account.id, walletId: account.walletId, runtimeId: null }, userId, strategy);
    if (paid.kind === 'refused') throw tradingErrors.accessPaymentRefused(paid.reason);
    if (paid.kind === 'pending') throw tradingErrors.accessPaymentPending(paid.reason);
  }

  /** An llm_agent's backtest calls its model with the caller's account key, at most maxModelCalls times. */
  private async agentFor(userId: string, input: ReplayInput) {
    if (!input.accountId || input.maxModelCalls === undefined) throw tradingErrors.invalidBacktest("an llm_agent's backtest names the accountId whose provider key pays its model calls, and maxModelCalls");
    await this.catalog.account(userId, input.accountId);
    return this.agents.forAccount(input.accountId, input.maxModelCalls);
  }

  /** The cron's ticks in [from, to], UTC; the window must be in the past and hold at most `maxTicks`. */
  private ticksOf(input: ReplayInput, maxTicks: number): Date[] {
    const from = new Date(input.from);
    const to = new Date(input.to);
    if (from >= to) throw tradingErrors.invalidWindow('from must be before to');
    if (to > this.clock.now()) throw tradingErrors.invalidWindow('to must not be in the future: the feed has no candles there yet');
    const cron = utcCron(input.cronExpression);
    const ticks: Date[] = [];
    for (let tick = nextTick(cron, new Date(from.getTime() - 1)); tick && tick <= to; tick = nextTick(cron, tick)) {
      if (ticks.length === maxTicks) throw tradingErrors.invalidWindow(`the window holds more than ${maxTicks} ticks${maxTicks === TRADING_LIMITS.backtestTicks ? ': run it as a background job (POST /agentic-trading/backtests)' : ''}`);
      ticks.push(tick);
    }
    return ticks;
  }
}

/** Candles a replay reads into memory at most (about 200 bytes each): past it, its ticks read the feed one by one. */
const MAX_PREFETCHED_CANDLES = 1_000_000;

/**
 * The feed a replay reads: a stored feed's window read at once (two statements per symbol instead of two per tick,
 * memo-feed.ts) when its candles fit in memory, and shared by an optimisation's trials; else the feed itself (the
 * embedded feed computes its candles and remembers them).
 */
async function replayFeed(feed: MarketDataProvider & { bulk?: BulkReads }, definition: { universe: string[]; candleInterval: string }, perTick: number, ticks: Date[]): Promise<MarketDataProvider> {
  if (!feed.bulk || ticks.length === 0) return feed;
  const interval = CANDLE_INTERVALS[definition.candleInterval]!;
  const spanned = (lastClosedStart(ticks.at(-1)!, interval) - lastClosedStart(ticks[0]!, interval)) / interval + perTick;
  if (definition.universe.length * spanned > MAX_PREFETCHED_CANDLES) return feed;
  const memo = new MemoFeed(feed);
  await memo.prefetch(definition.universe, interval, ticks, perTick);
  return memo;
}
