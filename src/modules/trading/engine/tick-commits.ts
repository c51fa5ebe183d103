// What a tick commits (TickCommits.decide): skipped when stale, refused when its metered payment is, else the
// strategy's decision over the book (engine.ts) with one execution per order. The runner (ticks.ts) commits it
// only over the book it read; the types a tick is asked with live here, below the runner.
import type { Cron } from 'croner';
import type { AppContext } from '../../../context.js';
import { newId } from '../../../platform/ids.js';
import { StalePrice, type MarketDataProvider } from '../data/market-data.js';
import type { Meter } from '../metering/metering.js';
import type { TickCommit, TickState } from '../runtimes/runtime-store.js';
import { utcCron } from '../runtimes/schedules.js';
import type { CatalogStore, VersionRow } from '../store.js';
import type { AgentDeciders } from '../strategies/agent-decider.js';
import type { LlmAgentDefinition } from '../strategies/llm-agent.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import type { RuntimeStatus, TriggerType } from '../tables.js';
import { reconcileResting } from '../venues/protective-orders.js';
import type { Venue } from '../venues/venue.js';
import { decideTick, evaluateTick, type StrategyKind } from './engine.js';

export type TickTrigger = TriggerType;

/** Where the owner's flatten runs: any runtime not provisioning or ended. */
export const FLATTENABLE: readonly RuntimeStatus[] = ['active', 'paused', 'needs_review'];

export interface TickRequest {
  runtimeId: string;
  scheduledAt: Date;
  /** Which delivery of the tick this is (the event's attempts; 1 for a manual run). */
  attempt: number;
}

export interface TickParts {
  feedFor(version: VersionRow): MarketDataProvider;
  venue: Venue;
  /** Charges metered ticks before they run (docs/trading.md#payment-metering). */
  meter: Meter;
  /** An llm_agent's decisions, with its account's provider keys. */
  agents: AgentDeciders;
}

/** The commit of each tick the runner reads: decided over its runtime's version, book, limits and the feed. */
export class TickCommits {
  /** Versions never change: cached by id for every tick after the first. */
  private readonly versions = new Map<string, VersionRow>();
  /** Runtimes' crons by expression (stale ticks are told by the next run after theirs). */
  private readonly crons = new Map<string, Cron>();

  constructor(
    private readonly ctx: AppContext,
    private readonly catalog: CatalogStore,
    private readonly parts: TickParts,
  ) {}

  /** One tick's commit: skipped when stale, else paid for (a metered tick) and evaluated. */
  async decide(trigger: TickTrigger, tick: TickRequest, state: TickState, now: Date): Promise<TickCommit> {
    const due = trigger === 'schedule' ? this.nextDue(state, tick.scheduledAt) : null;
    if (due && due.getTime() <= now.getTime()) return this.stale(trigger, tick, state, now, due);
    const paid = await this.payFor(trigger, tick, state);
    if (paid.kind !== 'paid') return this.paymentRefused(trigger, tick, state, now, paid.reason);
    try {
      return await this.evaluate(trigger, tick, state, now);
    } catch (error) {
      // A live venue's price older than TRADING_MAX_PRICE_AGE_SECONDS: nothing is decided on it (venue-feed.ts).
      if (!(error instanceof StalePrice)) throw error;
      return this.undecided(trigger, tick, state, now, { status: 'skipped', error: { code: 'stale_price', message: error.message.slice(0, 1000) }, review: null });
    }
  }

  /** The next run of the runtime's cron after `scheduledAt`: once it is due, that tick is stale. */
  private nextDue(state: TickState, scheduledAt: Date): Date | null {
    let cron = this.crons.get(state.cronExpression);
    if (!cron) this.crons.set(state.cronExpression, (cron = utcCron(state.cronExpression)));
    return cron.nextRun(scheduledAt);
  }

  /** A scheduled tick consumed after its successor was due: recorded `skipped`, nothing decided or charged. */
  private stale(trigger: TickTrigger, tick: TickRequest, state: TickState, now: Date, due: Date): Promise<TickCommit> {
    const message = `run at ${now.toISOString()}, after the next tick was due (${due.toISOString()}): its prices are old, so nothing was decided or placed`;
    return this.undecided(trigger, tick, state, now, { status: 'skipped', error: { code: 'stale_tick', message }, review: null });
  }

  /** A tick that decides nothing: the book stays, the execution says why, and the runtime goes to `review` if given. */
  private async undecided(
    trigger: TickTrigger,
    tick: TickRequest,
    state: TickState,
    now: Date,
    { status, error, review }: { status: 'skipped' | 'failed'; error: Record<string, string>; review: string | null },
  ): Promise<TickCommit> {
    const version = await this.version(state.strategyVersionId);
    return {
      bookVersion: state.bookVersion,
      book: state.book,
      from: ['active'],
      status: review ? 'needs_review' : null,
      reason: review,
      executions: [{ ...this.executionBase(tick, trigger, version, now), status, inputsDigest: null, decision: null, riskAssessment: null, order: null, error, completedAt: now }],
    };
  }

  private async evaluate(trigger: TickTrigger, tick: TickRequest, state: TickState, now: Date): Promise<TickCommit> {
    const version = await this.version(state.strategyVersionId);
    const input = {
      version: { id: version.id, contentHash: version.contentHash, kind: version.kind as StrategyKind, definition: version.definition as QuantSignalDefinition | LlmAgentDefinition },
      limits: { fundLimitUsd: state.fundLimitUsd, maxLeverage: state.maxLeverage, maxDrawdownPercent: state.maxDrawdownPercent },
      book: state.book,
      killSwitch: state.killSwitch,
      at: tick.scheduledAt,
      flatten: trigger === 'flatten',
      account: state.account,
      // A live venue re-checks each order at its quote plus the allowance: "as much as allowed" keeps that room.
      sizingMarginBps: this.parts.venue.live ? this.ctx.config.trading.maxSlippageBps : undefined,
    };
    const parts = { feed: this.parts.feedFor(version), venue: this.parts.venue, agent: this.parts.agents.forAccount(state.accountId) };
    // A live venue's protective orders first: what they filled while we were away is booked, the rest re-rested
    // to the book's positions (protective-orders.ts); the tick decides over the book they leave.
    const { venue } = this.parts;
    const rested = venue.live && venue.resting ? await reconcileResting({ book: state.book, venue: venue as Venue & { resting: NonNullable<Venue['resting']> }, runtimeId: state.id, versionHash: version.contentHash, at: tick.scheduledAt }) : null;
    if (rested) input.book = rested.book;
    // A live venue's orders are only decided here, and claimed by the commit before they are placed.
    const decided = venue.live ? await decideTick(input, parts) : await evaluateTick(input, parts);
    // The resting orders' fills are the tick's first legs (their executions), before what it decided.
    const outcome = rested && rested.legs.length > 0 ? { ...decided, legs: [...rested.legs, ...decided.legs] } : decided;
    // A drawdown block hands the runtime to its owner (engine.ts, REVIEW_LIMITS); a flatten moves no status.
    const review = outcome.breaches.length > 0;
    const base = this.executionBase(tick, trigger, version, now);
    // Each leg its own execution, its id its client order id at a live venue; ids ascend with the legs.
    const ids = outcome.legs.map(() => newId(tick.scheduledAt.getTime())).sort();
    return {
      bookVersion: state.bookVersion,
      book: outcome.book,
      from: trigger === 'flatten' ? FLATTENABLE : ['active'],
      status: trigger === 'flatten' ? null : review ? 'needs_review' : 'active',
      reason: review ? `risk limit breached: ${outcome.breaches.join(', ')}` : null,
      executions: outcome.legs.map((leg, i) => ({
        ...base,
        id: ids[i]!,
        leg: i,
        status: leg.order?.status === 'placing' ? 'placing' : leg.status,
        inputsDigest: leg.inputsDigest,
        decision: leg.decision,
        riskAssessment: leg.riskAssessment,
        order: leg.order,
        error: null,
        completedAt: leg.order?.status === 'placing' ? null : now,
        // Set as the claim commits (runRound): the claiming tick holds the placement from then.
        placingUntil: null,
      })),
    };
  }

  /**
   * A metered tick's market data and execution (free when unpriced); a charge not settled yet fails the
   * tick, to be retried. The owner's flatten is never charged: an account that cannot pay must still close.
   */
  private async payFor(trigger: TickTrigger, tick: TickRequest, state: TickState) {
    const { meter, feedFor } = this.parts;
    if (!meter.metersTicks || trigger === 'flatten') return { kind: 'paid' } as const;
    const feed = feedFor(await this.version(state.strategyVersionId)).name;
    const paid = await meter.forTick({ accountId: state.accountId, walletId: state.walletId, runtimeId: state.id }, trigger, tick.scheduledAt, feed);
    if (paid.kind === 'pending') throw new Error(`the tick's metered payment is not settled yet (${paid.reason})`);
    return paid;
  }

  /** The account could not pay for the tick: nothing runs, the runtime goes to review (an account problem), the book stays. */
  private paymentRefused(trigger: TickTrigger, tick: TickRequest, state: TickState, now: Date, reason: string): Promise<TickCommit> {
    const error = { code: 'payment_refused', reason, message: `The account's agent wallet could not pay for this tick: ${reason}` };
    return this.undecided(trigger, tick, state, now, { status: 'failed', error, review: `tick payment refused: ${reason}` });
  }

  executionBase(tick: TickRequest, triggerType: TickTrigger, version: VersionRow, now: Date) {
    // Ids follow the tick's time, so "newest first" lists executions by when they were due.
    const { runtimeId, scheduledAt, attempt } = tick;
    return { id: newId(scheduledAt.getTime()), runtimeId, triggerType, scheduledAt, leg: 0, attemptCount: attempt, strategyVersionHash: version.contentHash, createdAt: now, placingUntil: null };
  }

  async version(id: string): Promise<VersionRow> {
    let version = this.versions.get(id);
    if (!version) {
      version = (await this.catalog.version(id))!.version;
      this.versions.set(id, version);
    }
    return version;
  }
}
