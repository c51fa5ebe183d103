import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import { newId } from '../../platform/ids.js';
import type { Book } from './book.js';
import { evaluateTick } from './engine.js';
import type { MarketDataProvider } from './market-data.js';
import type { QuantSignalDefinition } from './quant-signal.js';
import { RuntimeStore, type ExecutionRow, type RuntimeRow } from './runtime-store.js';
import type { CatalogStore, VersionRow } from './store.js';
import type { Venue } from './venue.js';

export type TickTrigger = 'schedule' | 'manual';

export type TickResult =
  | { ran: true; execution: ExecutionRow; runtime: RuntimeRow; movedToReview: boolean }
  /** Nothing ran: the runtime is gone or not active, or this tick already has its execution. */
  | { ran: false; reason: 'gone' | 'not_active' | 'done'; status?: string };

export interface TickParts {
  feedFor(version: VersionRow): MarketDataProvider;
  venue: Venue;
}

/**
 * Runs one tick of a runtime, scheduled or manual, exactly once. In one transaction: the runtime's row
 * lock (so its book changes one tick at a time), the check that this tick has no finished execution,
 * the evaluation, and the execution row with the book it leaves. A worker that dies mid-tick leaves
 * nothing; the tick's event is delivered again and runs then. A tick that throws is recorded as a
 * failed execution, which a redelivery may take over (attemptCount counts the tries).
 */
export class TickRunner {
  private readonly runtimes: RuntimeStore;
  /** Versions never change: cached by id for every tick after the first. */
  private readonly versions = new Map<string, VersionRow>();

  constructor(
    private readonly ctx: AppContext,
    private readonly catalog: CatalogStore,
    private readonly parts: TickParts,
  ) {
    this.runtimes = new RuntimeStore(ctx.db);
  }

  async run(runtimeId: string, trigger: TickTrigger, scheduledAt: Date, attempt: number): Promise<TickResult> {
    try {
      return await this.ctx.db.transaction(async (tx) => {
        const locked = await this.runtimes.lockForTick(tx, runtimeId);
        if (!locked) return { ran: false, reason: 'gone' };
        const { runtime, killSwitch } = locked;
        if (runtime.status !== 'active') return { ran: false, reason: 'not_active', status: runtime.status };
        const done = await this.runtimes.tickStatus(tx, runtimeId, trigger, scheduledAt);
        if (done && done !== 'failed') return { ran: false, reason: 'done', status: done };

        const version = await this.version(runtime.strategyVersionId, tx);
        const outcome = await evaluateTick(
          {
            version: { contentHash: version.contentHash, definition: version.definition as QuantSignalDefinition },
            limits: { fundLimitUsd: runtime.fundLimitUsd, maxLeverage: runtime.maxLeverage, maxDrawdownPercent: runtime.maxDrawdownPercent },
            book: runtime.book as Book,
            killSwitch,
            at: scheduledAt,
          },
          { feed: this.parts.feedFor(version), venue: this.parts.venue },
        );
        const now = this.ctx.clock.now();
        const execution = await this.runtimes.recordExecution(tx, {
          ...this.executionBase(runtimeId, trigger, scheduledAt, attempt, version, now),
          status: outcome.status,
          inputsDigest: outcome.inputsDigest,
          decision: outcome.decision,
          riskAssessment: outcome.riskAssessment,
          order: outcome.order,
          error: null,
          completedAt: now,
        });
        await this.runtimes.saveBook(tx, runtimeId, outcome.book, now);
        // A breach blocks the order (above) and hands the runtime to its owner.
        const reviewed = outcome.breaches.length
          ? await this.runtimes.move(tx, runtimeId, ['active'], 'needs_review', `risk limit breached: ${outcome.breaches.join(', ')}`, now)
          : null;
        return { ran: true, execution: execution!, runtime: reviewed ?? runtime, movedToReview: reviewed !== null } as const;
      });
    } catch (error) {
      await this.recordFailure(runtimeId, trigger, scheduledAt, attempt, error);
      throw error;
    }
  }

  private async recordFailure(runtimeId: string, trigger: TickTrigger, scheduledAt: Date, attempt: number, error: unknown): Promise<void> {
    const runtime = await this.runtimes.get(runtimeId);
    if (!runtime) return;
    const version = await this.version(runtime.strategyVersionId);
    const now = this.ctx.clock.now();
    const message = error instanceof Error ? error.message : String(error);
    await this.runtimes.recordExecution(this.ctx.db, {
      ...this.executionBase(runtimeId, trigger, scheduledAt, attempt, version, now),
      status: 'failed',
      inputsDigest: null,
      decision: null,
      riskAssessment: null,
      order: null,
      error: { message: message.slice(0, 1000) },
      completedAt: null,
    });
  }

  private executionBase(runtimeId: string, triggerType: TickTrigger, scheduledAt: Date, attemptCount: number, version: VersionRow, now: Date) {
    // Ids follow the tick's time, so "newest first" lists executions by when they were due.
    return { id: newId(scheduledAt.getTime()), runtimeId, triggerType, scheduledAt, attemptCount, strategyVersionHash: version.contentHash, createdAt: now };
  }

  /** Inside a transaction, pass it: PGlite has one connection, and the transaction holds it. */
  private async version(id: string, executor?: Executor): Promise<VersionRow> {
    let version = this.versions.get(id);
    if (!version) {
      version = (await this.catalog.version(id, executor))!.version;
      this.versions.set(id, version);
    }
    return version;
  }
}
