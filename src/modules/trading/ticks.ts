import type { Cron } from 'croner';
import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import type { Fill } from './book.js';
import type { AgentDeciders } from './agent-decider.js';
import { decideTick, evaluateTick, filled, requestOf, type OrderSummary, type StrategyKind } from './engine.js';
import type { LlmAgentDefinition } from './llm-agent.js';
import { StalePrice, type MarketDataProvider } from './market-data.js';
import type { Meter } from './metering.js';
import type { QuantSignalDefinition } from './quant-signal.js';
import { RuntimeStore, type ExecutionRow, type PlacingExecution, type TickCommit, type TickState } from './runtime-store.js';
import { utcCron } from './schedules.js';
import type { CatalogStore, VersionRow } from './store.js';
import type { RuntimeStatus, TriggerType } from './tables.js';
import { cancelRestingFor, reconcileResting } from './protective-orders.js';
import { checkAtQuote, type DecidedRisk } from './quote-check.js';
import { OrderRejected, OrderUnfilled, type Venue } from './venue.js';

export type TickTrigger = TriggerType;

/** Where the owner's flatten runs: any runtime not provisioning or ended. */
export const FLATTENABLE: readonly RuntimeStatus[] = ['active', 'paused', 'needs_review'];
const runsIn = (trigger: TickTrigger, status: RuntimeStatus) => (trigger === 'flatten' ? FLATTENABLE.includes(status) : status === 'active');

export interface TickRequest {
  runtimeId: string;
  scheduledAt: Date;
  /** Which delivery of the tick this is (the event's attempts; 1 for a manual run). */
  attempt: number;
}

export type TickResult =
  /** `executions`: the tick's, one per order (its legs, in order). */
  | { ran: true; executions: ExecutionRow[]; runtime: TickState; movedToReview: boolean }
  /** Nothing ran: the runtime is gone or not active, or this tick already has its execution. */
  | { ran: false; reason: 'gone' | 'not_active' | 'done'; status?: string }
  /** Nothing ran: the runtime's order is out at the venue and another call is placing it; try again later. */
  | { ran: false; reason: 'placing' }
  /** The tick threw; it is recorded as a failed execution and may be retried. */
  | { ran: false; reason: 'failed'; error: Error };

export interface TickParts {
  feedFor(version: VersionRow): MarketDataProvider;
  venue: Venue;
  /** Charges metered ticks before they run (docs/trading.md#payment-metering). */
  meter: Meter;
  /** An llm_agent's decisions, with its account's provider keys. */
  agents: AgentDeciders;
}

/** A tick's claimed orders for one caller to place (TickRunner.placeLegs). */
interface Placement<T> {
  tick: T;
  state: TickState;
  /** The claimed legs, in leg order. */
  legs: PlacingExecution[];
  /** Claimed by this caller's commit, so certainly never sent; the others may be out at the venue. */
  fresh: boolean;
  /** The placing_until this caller holds each leg's placement by (fresh: from the commit; else taken leg by leg). */
  leases?: Date[];
  /** The claim's commit moved the runtime to review (a drawdown block beside the orders it claimed). */
  reviewed?: boolean;
}

/** Reads before giving up on a runtime whose book keeps changing under a tick (another tick of it won each time). */
const MAX_READS = 10;
/**
 * How long one caller holds a claimed order's placement at the venue; a venue adapter's call must time out
 * well within it. A caller that died holding it delays the order's retry by this much, never doubles it.
 */
export const PLACEMENT_LEASE_MS = 60_000;

/**
 * Runs ticks of runtimes, scheduled or manual, each exactly once: read the runtimes and whether each
 * tick already ran, evaluate, and commit each book with its execution only over the book that was
 * read (RuntimeStore.commitTicks), a batch in one read and one write; a tick that lost a race is read
 * again. A worker that dies mid-batch leaves nothing of it; the ticks' events are delivered again and
 * run then. A tick that throws is recorded as a failed execution, which a redelivery may take over
 * (attemptCount counts the tries).
 *
 * A live venue's order is claimed by that commit (the execution `placing`) and placed only after it; a
 * runtime with an order placing runs nothing else until that order's fill is committed (docs/trading.md,
 * "Live venues").
 */
export class TickRunner {
  private readonly runtimes: RuntimeStore;
  /** Versions never change: cached by id for every tick after the first. */
  private readonly versions = new Map<string, VersionRow>();
  /** Runtimes' crons by expression (stale ticks are told by the next run after theirs). */
  private readonly crons = new Map<string, Cron>();

  constructor(
    private readonly ctx: AppContext,
    private readonly catalog: CatalogStore,
    private readonly parts: TickParts,
  ) {
    this.runtimes = new RuntimeStore(ctx.db, ctx.clock);
  }

  /** One tick; a failure is thrown (after it is recorded). */
  async run(runtimeId: string, trigger: TickTrigger, scheduledAt: Date, attempt: number): Promise<Exclude<TickResult, { reason: 'failed' }>> {
    const [result] = await this.runMany(trigger, [{ runtimeId, scheduledAt, attempt }]);
    if (!result!.ran && result!.reason === 'failed') throw result!.error;
    return result as Exclude<TickResult, { reason: 'failed' }>;
  }

  /** The ticks' results, in their order. Ticks of one runtime run one after another, oldest first. */
  async runMany(trigger: TickTrigger, ticks: readonly TickRequest[]): Promise<TickResult[]> {
    const results: (TickResult | undefined)[] = ticks.map(() => undefined);
    let pending = ticks.map((tick, index) => ({ ...tick, index })).sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime());
    for (let read = 0; pending.length > 0; read++) {
      // At most one tick per runtime per round: a runtime's ticks each build on the book the last one left.
      const round = pending.filter((tick, i) => pending.findIndex((other) => other.runtimeId === tick.runtimeId) === i);
      const later = pending.filter((tick) => !round.includes(tick));
      if (read === MAX_READS) {
        for (const tick of round) results[tick.index] = await this.failed(trigger, tick, new Error(`the runtime's book changed under ${MAX_READS} reads of this tick`));
        pending = later;
        continue;
      }
      const lost = await this.runRound(trigger, round, results);
      pending = [...lost, ...later].sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime());
    }
    return results as TickResult[];
  }

  /** One read and one commit for ticks of distinct runtimes (then a live venue's orders); answers the ticks that lost a race. */
  private async runRound<T extends TickRequest & { index: number }>(trigger: TickTrigger, round: T[], results: (TickResult | undefined)[]): Promise<T[]> {
    const states = await this.runtimes.tickStates(trigger, round);
    const now = this.ctx.clock.now();
    const commits: { tick: T; state: TickState; commit: TickCommit }[] = [];
    const orders: Placement<T>[] = [];
    const toRun: { tick: T; state: TickState }[] = [];
    for (const tick of round) {
      const state = states.find((s) => s.id === tick.runtimeId && s.scheduledAt.getTime() === tick.scheduledAt.getTime());
      if (!state) results[tick.index] = { ran: false, reason: 'gone' };
      // Orders out at a live venue are filled before anything else of their runtime runs, whatever its status now.
      else if (state.placing.length > 0) orders.push({ tick, state, legs: state.placing, fresh: false });
      else if (!runsIn(trigger, state.status)) results[tick.index] = { ran: false, reason: 'not_active', status: state.status };
      else if (state.tickStatus && state.tickStatus !== 'failed') results[tick.index] = { ran: false, reason: 'done', status: state.tickStatus };
      else toRun.push({ tick, state });
    }
    // The round's ticks decide side by side (an llm_agent's waits on its model), and commit together below.
    const decided = await Promise.all(
      toRun.map(async ({ tick, state }) => {
        try {
          return { tick, state, commit: await this.decide(trigger, tick, state, now) };
        } catch (error) {
          results[tick.index] = await this.failed(trigger, tick, error);
          return null;
        }
      }),
    );
    for (const entry of decided) if (entry) commits.push(entry);
    // A claim's placement lease starts as it commits (by the database's clock), not when the round began.
    let committed: ExecutionRow[];
    try {
      committed = await this.runtimes.commitTicks(commits.map((c) => c.commit), PLACEMENT_LEASE_MS);
    } catch (error) {
      for (const { tick } of commits) results[tick.index] = await this.failed(trigger, tick, error);
      return [];
    }
    const lost: T[] = [];
    for (const { tick, state, commit } of commits) {
      const executions = committed.filter((e) => e.runtimeId === tick.runtimeId);
      const claimed = executions.filter((e) => e.status === 'placing');
      if (executions.length === 0) lost.push(tick);
      // Claimed for a live venue: placed below, over the book version the claim moved to.
      else if (claimed.length > 0) orders.push({ tick, state: { ...state, status: commit.status ?? state.status, book: commit.book, bookVersion: state.bookVersion + 1 }, legs: claimed, fresh: true, leases: claimed.map((e) => e.placingUntil!), reviewed: commit.status === 'needs_review' });
      else results[tick.index] = { ran: true, executions, runtime: { ...state, status: commit.status ?? state.status }, movedToReview: commit.status === 'needs_review' };
    }
    await Promise.all(orders.map((order) => this.placeLegs(trigger, order, results, lost)));
    return lost;
  }

  /**
   * A tick's claimed orders placed one after another, in leg order, each over the book the one before it left.
   * One caller at a time places a leg: the tick that claimed it, else whoever takes its lapsed placement; a leg
   * another caller holds stops this one there ('placing'), so legs are never placed out of order or twice. When
   * the legs are this tick's own, its result is every execution of the tick; else the tick is read again.
   */
  private async placeLegs<T extends TickRequest & { index: number }>(trigger: TickTrigger, { tick, state, legs, fresh, leases, reviewed }: Placement<T>, results: (TickResult | undefined)[], lost: T[]): Promise<void> {
    const own = legs[0]!.triggerType === trigger && legs[0]!.scheduledAt.getTime() === tick.scheduledAt.getTime();
    let current = state;
    let rejected = false;
    for (const [i, placing] of legs.entries()) {
      const held = leases?.[i] ?? (await this.runtimes.takePlacement(placing.id, PLACEMENT_LEASE_MS));
      if (!held) {
        results[tick.index] = { ran: false, reason: 'placing' };
        return;
      }
      let execution;
      try {
        execution = await this.place(current, placing, own ? tick.attempt : 0, fresh, held);
      } catch (error) {
        // No answer: the order may be out, or may still arrive at the venue. The lease is kept until it lapses,
        // so the next caller asks the venue (findOrder) only once a late arrival would have shown; the legs after
        // it wait for it.
        const failing = { runtimeId: tick.runtimeId, scheduledAt: placing.scheduledAt, attempt: 0 };
        if (!own) await this.failed(placing.triggerType as TickTrigger, failing, error, placing.leg);
        results[tick.index] = await this.failed(trigger, tick, error, own ? placing.leg : 0);
        return;
      }
      if (execution === 'lease_lost') {
        results[tick.index] = { ran: false, reason: 'placing' };
        return;
      }
      if (!execution) {
        lost.push(tick); // another worker recorded this leg: read again
        return;
      }
      rejected ||= execution.status === 'rejected';
      // The next leg places over the book this one left (its fill, or the version its no-fill moved on).
      if (i < legs.length - 1) {
        const row = (await this.runtimes.get(state.id))!;
        current = { ...current, book: row.book as TickState['book'], bookVersion: row.bookVersion };
      }
    }
    if (!own) {
      lost.push(tick); // another tick's orders came first: read again
      return;
    }
    // A rejection (or the claim's own drawdown block) moved the runtime to review: its schedule follows (the
    // caller, else the reconciler's loop).
    const movedToReview = rejected || reviewed === true;
    const executions = await this.runtimes.tickExecutions(tick.runtimeId, trigger, tick.scheduledAt);
    results[tick.index] = { ran: true, executions, runtime: movedToReview ? { ...state, status: 'needs_review' } : state, movedToReview };
  }

  /**
   * Places a claimed order at the live venue, its execution id as the client order id, and commits its
   * fill, or its rejection (the runtime goes to review); null when another worker committed it first. A
   * claim that is not `fresh` may be out already: the venue is asked for it before it is placed again.
   */
  private async place(state: TickState, placing: PlacingExecution, attempt: number, fresh: boolean, lease: Date): Promise<ExecutionRow | null | 'lease_lost'> {
    const { venue } = this.parts;
    const order = placing.order as OrderSummary;
    const at = this.ctx.clock.now();
    // Still ours, and a full lease ahead of the venue call: renewed by the value this caller holds it by.
    if (!(await this.runtimes.renewPlacement(placing.id, lease, PLACEMENT_LEASE_MS))) return 'lease_lost';
    let fill: Fill;
    let sent = order;
    let book = state.book;
    const noFill = { executionId: placing.id, runtimeId: state.id, bookVersion: state.bookVersion, at };
    try {
      const known = fresh ? null : await venue.findOrder({ clientOrderId: placing.id, symbol: order.symbol });
      // An order against the position goes only once its resting protective orders are cancelled (the venue holds
      // the asset for them, and a stop filling beside it would close twice); one that filled first closed it already.
      const held = Number(book.positions[order.symbol]?.qty ?? 0);
      if (!known && held !== 0 && (order.side === 'sell') === held > 0) {
        const cancelled = await cancelRestingFor(book, order.symbol, venue);
        if ('filledFirst' in cancelled) {
          const message = `not sent: the resting ${cancelled.filledFirst.kind} ${cancelled.filledFirst.clientOrderId} filled at the venue first; the next tick books its fill`;
          return this.runtimes.commitNoFill({ ...noFill, status: 'completed', order: { ...sent, status: 'unfilled' }, error: { code: 'resting_order_filled', message }, review: null });
        }
        book = cancelled.book;
      }
      if (!known && venue.prices) {
        // The last look before the venue call: the order valued at the venue's quote now, plus the allowance (quote-check.ts).
        const quote = await venue.prices.quote(order.symbol);
        sent = { ...order, quote } as OrderSummary;
        const refusal = checkAtQuote({
          order: { ...order, referencePrice: referencePriceOf(placing) },
          quote,
          book: state.book,
          limits: { fundLimitUsd: state.fundLimitUsd, maxLeverage: state.maxLeverage },
          decided: (placing.riskAssessment as DecidedRisk | null) ?? null,
          maxSlippageBps: this.ctx.config.trading.maxSlippageBps,
        });
        if (refusal) return this.runtimes.commitNoFill({ ...noFill, status: 'blocked', order: { ...sent, status: 'blocked' }, error: refusal, review: null });
      }
      fill = known ?? (await venue.place({ ...requestOf({ ...order, referencePrice: referencePriceOf(placing) }, placing.scheduledAt), clientOrderId: placing.id }));
    } catch (error) {
      if (error instanceof OrderUnfilled) return this.runtimes.commitNoFill({ ...noFill, status: 'completed', order: { ...sent, status: 'unfilled' }, error: null, review: null });
      if (!(error instanceof OrderRejected)) throw error;
      return this.runtimes.commitNoFill({
        ...noFill,
        status: 'rejected',
        order: { ...sent, status: 'rejected' },
        error: { code: 'order_rejected', message: error.message.slice(0, 1000) },
        review: `order rejected by ${venue.name}: ${error.message.slice(0, 200)}`,
      });
    }
    const after = filled(book, fill, sent, placing.scheduledAt);
    return this.runtimes.commitFill({ executionId: placing.id, runtimeId: state.id, bookVersion: state.bookVersion, book: after.book, order: after.order, attempt, at });
  }

  /** One tick's commit: skipped when stale, else paid for (a metered tick) and evaluated. */
  private async decide(trigger: TickTrigger, tick: TickRequest, state: TickState, now: Date): Promise<TickCommit> {
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

  /** Records the tick failed (on its leg `leg`: a claimed order keeps its status and records the error). */
  private async failed(trigger: TickTrigger, tick: TickRequest, error: unknown, leg = 0): Promise<TickResult> {
    const failure = error instanceof Error ? error : new Error(String(error));
    await this.recordFailure(trigger, tick, failure, leg).catch((recording) => this.ctx.log.error({ err: recording }, 'recording a failed tick failed'));
    return { ran: false, reason: 'failed', error: failure };
  }

  private async recordFailure(trigger: TickTrigger, tick: TickRequest, error: Error, leg: number): Promise<void> {
    const runtime = await this.runtimes.get(tick.runtimeId);
    if (!runtime) return;
    const version = await this.version(runtime.strategyVersionId);
    await this.runtimes.recordFailure({
      ...this.executionBase(tick, trigger, version, this.ctx.clock.now()),
      leg,
      status: 'failed',
      inputsDigest: null,
      decision: null,
      riskAssessment: null,
      order: null,
      error: { message: error.message.slice(0, 1000) },
      completedAt: null,
    });
  }

  private executionBase(tick: TickRequest, triggerType: TickTrigger, version: VersionRow, now: Date) {
    // Ids follow the tick's time, so "newest first" lists executions by when they were due.
    const { runtimeId, scheduledAt, attempt } = tick;
    return { id: newId(scheduledAt.getTime()), runtimeId, triggerType, scheduledAt, leg: 0, attemptCount: attempt, strategyVersionHash: version.contentHash, createdAt: now, placingUntil: null };
  }

  private async version(id: string): Promise<VersionRow> {
    let version = this.versions.get(id);
    if (!version) {
      version = (await this.catalog.version(id))!.version;
      this.versions.set(id, version);
    }
    return version;
  }
}

/** The feed's price the order was decided at (older claims carry it only in their decision's signals). */
function referencePriceOf(placing: PlacingExecution): number {
  const order = placing.order as OrderSummary;
  if (order.referencePrice !== undefined) return order.referencePrice;
  const signals = (placing.decision as { signals: { symbol: string; price: number }[] }).signals;
  return signals.find((s) => s.symbol === order.symbol)!.price;
}
