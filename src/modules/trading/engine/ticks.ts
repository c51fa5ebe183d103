// The tick runner: runs ticks of runtimes, scheduled or manual, each exactly once. It reads a round of them,
// has each one's commit decided (tick-commits.ts), commits them together over the books it read, and places a
// live venue's claimed orders leg by leg (placement.ts); a tick that throws is recorded as a failed execution.
import type { AppContext } from '../../../context.js';
import { RuntimeStore, type ExecutionRow, type PlacingExecution, type TickCommit, type TickState } from '../runtimes/runtime-store.js';
import type { CatalogStore } from '../store.js';
import type { RuntimeStatus } from '../tables.js';
import { LivePlacement, PLACEMENT_LEASE_MS } from './placement.js';
import { FLATTENABLE, TickCommits, type TickParts, type TickRequest, type TickTrigger } from './tick-commits.js';

const runsIn = (trigger: TickTrigger, status: RuntimeStatus) => (trigger === 'flatten' ? FLATTENABLE.includes(status) : status === 'active');

export type TickResult =
  /** `executions`: the tick's, one per order (its legs, in order). */
  | { ran: true; executions: ExecutionRow[]; runtime: TickState; movedToReview: boolean }
  /** Nothing ran: the runtime is gone or not active, or this tick already has its execution. */
  | { ran: false; reason: 'gone' | 'not_active' | 'done'; status?: string }
  /** Nothing ran: the runtime's order is out at the venue and another call is placing it; try again later. */
  | { ran: false; reason: 'placing' }
  /** The tick threw; it is recorded as a failed execution and may be retried. */
  | { ran: false; reason: 'failed'; error: Error };

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
  /** What each tick commits, with the versions and crons it caches. */
  private readonly commits: TickCommits;
  /** A live venue's claimed orders placed. */
  private readonly placement: LivePlacement;

  constructor(
    private readonly ctx: AppContext,
    catalog: CatalogStore,
    parts: TickParts,
  ) {
    this.runtimes = new RuntimeStore(ctx.db, ctx.clock);
    this.commits = new TickCommits(ctx, catalog, parts);
    this.placement = new LivePlacement(ctx, this.runtimes, parts.venue);
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
          return { tick, state, commit: await this.commits.decide(trigger, tick, state, now) };
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
        execution = await this.placement.place(current, placing, own ? tick.attempt : 0, fresh, held);
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

  /** Records the tick failed (on its leg `leg`: a claimed order keeps its status and records the error). */
  private async failed(trigger: TickTrigger, tick: TickRequest, error: unknown, leg = 0): Promise<TickResult> {
    const failure = error instanceof Error ? error : new Error(String(error));
    await this.recordFailure(trigger, tick, failure, leg).catch((recording) => this.ctx.log.error({ err: recording }, 'recording a failed tick failed'));
    return { ran: false, reason: 'failed', error: failure };
  }

  private async recordFailure(trigger: TickTrigger, tick: TickRequest, error: Error, leg: number): Promise<void> {
    const runtime = await this.runtimes.get(tick.runtimeId);
    if (!runtime) return;
    const version = await this.commits.version(runtime.strategyVersionId);
    await this.runtimes.recordFailure({
      ...this.commits.executionBase(tick, trigger, version, this.ctx.clock.now()),
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

}
