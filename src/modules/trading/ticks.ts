import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import { evaluateTick } from './engine.js';
import type { MarketDataProvider } from './market-data.js';
import type { QuantSignalDefinition } from './quant-signal.js';
import { RuntimeStore, type ExecutionRow, type TickState } from './runtime-store.js';
import type { CatalogStore, VersionRow } from './store.js';
import type { Venue } from './venue.js';

export type TickTrigger = 'schedule' | 'manual';

export type TickResult =
  | { ran: true; execution: ExecutionRow; runtime: TickState; movedToReview: boolean }
  /** Nothing ran: the runtime is gone or not active, or this tick already has its execution. */
  | { ran: false; reason: 'gone' | 'not_active' | 'done'; status?: string };

export interface TickParts {
  feedFor(version: VersionRow): MarketDataProvider;
  venue: Venue;
}

/** Reads before giving up on a runtime whose book keeps changing under the tick (another tick of it won each time). */
const MAX_READS = 10;

/**
 * Runs one tick of a runtime, scheduled or manual, exactly once: read the runtime and whether the tick
 * already ran, evaluate, and commit the book and the execution together only over the book that was
 * read (RuntimeStore.commitTick); a lost race reads again. A worker that dies mid-tick leaves nothing;
 * the tick's event is delivered again and runs then. A tick that throws is recorded as a failed
 * execution, which a redelivery may take over (attemptCount counts the tries).
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
    let version: VersionRow | null = null;
    try {
      for (let read = 0; read < MAX_READS; read++) {
        const state = await this.runtimes.tickState(runtimeId, trigger, scheduledAt);
        if (!state) return { ran: false, reason: 'gone' };
        if (state.status !== 'active') return { ran: false, reason: 'not_active', status: state.status };
        if (state.tickStatus && state.tickStatus !== 'failed') return { ran: false, reason: 'done', status: state.tickStatus };

        version = await this.version(state.strategyVersionId);
        const outcome = await evaluateTick(
          {
            version: { contentHash: version.contentHash, definition: version.definition as QuantSignalDefinition },
            limits: { fundLimitUsd: state.fundLimitUsd, maxLeverage: state.maxLeverage, maxDrawdownPercent: state.maxDrawdownPercent },
            book: state.book,
            killSwitch: state.killSwitch,
            at: scheduledAt,
          },
          { feed: this.parts.feedFor(version), venue: this.parts.venue },
        );
        const now = this.ctx.clock.now();
        // A breach blocks the order (in evaluateTick) and hands the runtime to its owner.
        const review = outcome.breaches.length > 0;
        const execution = await this.runtimes.commitTick({
          bookVersion: state.bookVersion,
          book: outcome.book,
          status: review ? 'needs_review' : 'active',
          reason: review ? `risk limit breached: ${outcome.breaches.join(', ')}` : null,
          execution: {
            ...this.executionBase(runtimeId, trigger, scheduledAt, attempt, version, now),
            status: outcome.status,
            inputsDigest: outcome.inputsDigest,
            decision: outcome.decision,
            riskAssessment: outcome.riskAssessment,
            order: outcome.order,
            error: null,
            completedAt: now,
          },
        });
        if (execution) return { ran: true, execution, runtime: { ...state, status: review ? 'needs_review' : 'active' }, movedToReview: review };
      }
      throw new Error(`the runtime's book changed under ${MAX_READS} reads of this tick`);
    } catch (error) {
      await this.recordFailure(runtimeId, trigger, scheduledAt, attempt, version, error);
      throw error;
    }
  }

  private async recordFailure(runtimeId: string, trigger: TickTrigger, scheduledAt: Date, attempt: number, known: VersionRow | null, error: unknown): Promise<void> {
    const runtime = known ? null : await this.runtimes.get(runtimeId);
    const version = known ?? (runtime ? await this.version(runtime.strategyVersionId) : null);
    if (!version) return;
    const message = error instanceof Error ? error.message : String(error);
    await this.runtimes.recordFailure({
      ...this.executionBase(runtimeId, trigger, scheduledAt, attempt, version, this.ctx.clock.now()),
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

  private async version(id: string): Promise<VersionRow> {
    let version = this.versions.get(id);
    if (!version) {
      version = (await this.catalog.version(id))!.version;
      this.versions.set(id, version);
    }
    return version;
  }
}
