import type { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { isUniqueViolation } from '../../../platform/db-errors.js';
import { newId } from '../../../platform/ids.js';
import { isPricedFor } from '../metering/access.js';
import { openBook, type Book } from '../engine/book.js';
import { digestOf } from '../../../platform/canonical-json.js';
import type { Catalog } from '../catalog.js';
import { tradingErrors } from '../errors.js';
import type { MarketDataProvider } from '../data/market-data.js';
import { atomicOf } from '../metering/metering.js';
import type { AlignTarget, RuntimeReconciler } from './reconcile.js';
import { utcCron } from './schedules.js';
import { RuntimeStore, type RuntimeRow } from './runtime-store.js';
import type { createRuntimeBody } from '../schemas/runtimes.js';
import type { Page, VersionRow } from '../store.js';
import type { RuntimeStatus } from '../tables.js';
import { FLATTENABLE, type TickTrigger } from '../engine/tick-commits.js';
import type { TickRunner } from '../engine/ticks.js';
import { bookView, executionView, runtimeView } from '../views.js';

type CreateRuntimeInput = z.infer<typeof createRuntimeBody>;
type Requested = 'active' | 'paused' | 'stopped';

/**
 * The moves a user may make (the spec's lifecycle): pause an active runtime (or one in review, to
 * acknowledge it), resume a paused one, stop a paused one (or one in review or failed). Stopping is
 * terminal. Asking for the status a runtime already has changes nothing.
 */
const MOVES: Record<Requested, readonly RuntimeStatus[]> = {
  paused: ['active', 'needs_review'],
  active: ['paused'],
  stopped: ['paused', 'needs_review', 'failed'],
};

/** Runtimes: create (idempotent), read, the status moves, manual runs, and their executions. */
export class RuntimeService {
  readonly store: RuntimeStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly catalog: Catalog,
    private readonly reconciler: RuntimeReconciler,
    private readonly runner: TickRunner,
    private readonly feedFor: (version: VersionRow) => MarketDataProvider,
    /** Refuses a version whose data cannot serve a runtime now (launch-check.ts); `sealed`: another owner's priced strategy. */
    private readonly checkData: (version: VersionRow, sealed: boolean) => Promise<void>,
  ) {
    this.store = new RuntimeStore(ctx.db, ctx.clock);
  }

  /**
   * Creates the runtime in `provisioning`, linked to the version it names for good, or answers the one
   * its idempotencyKey already made (created false); the same key with another body is a conflict.
   */
  async create(userId: string, input: CreateRuntimeInput & { idempotencyKey: string }) {
    const { idempotencyKey, ...definition } = input;
    const requestHash = digestOf(definition);
    const existing = await this.store.byIdempotencyKey(userId, idempotencyKey);
    if (existing) return this.repeat(existing, requestHash);
    utcCron(input.cronExpression);
    const { version, strategy } = await this.catalog.visibleVersion(userId, input.strategyVersionId);
    // Another user's priced strategy is charged at activation: only with the buyer's stated consent to that price.
    if (isPricedFor(strategy, userId) && atomicOf(input.maxAccessPriceUsd ?? null, 6) < atomicOf(strategy.accessPriceUsd, 6)) {
      throw tradingErrors.accessPriceNotAccepted(strategy.accessPriceUsd!);
    }
    await this.catalog.account(userId, input.accountId);
    // Data that cannot serve the runtime (not its live venue's prices, imported candles not current) is refused
    // now, rather than going active and failing, or trading on another market's prices, at its first tick.
    await this.checkData(version, isPricedFor(strategy, userId));
    const now = this.ctx.clock.now();
    const row: RuntimeRow = {
      id: newId(now.getTime()),
      userId,
      accountId: input.accountId,
      strategyVersionId: version.id,
      name: input.name,
      cronExpression: input.cronExpression.split(/\s+/).join(' '),
      fundLimitUsd: input.fundLimitUsd,
      maxLeverage: input.maxLeverage,
      maxDrawdownPercent: input.maxDrawdownPercent,
      idempotencyKey,
      requestHash,
      status: 'provisioning',
      statusReason: null,
      scheduleState: null,
      scheduleId: null,
      book: openBook(input.fundLimitUsd),
      bookVersion: 0,
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.store.insert(row);
    } catch (error) {
      if (!isUniqueViolation(error, 'trading_runtimes_idempotency_unique')) throw error;
      const winner = await this.store.byIdempotencyKey(userId, idempotencyKey);
      if (!winner) throw error;
      return this.repeat(winner, requestHash);
    }
    await this.alignSoon(row);
    return { created: true, runtime: await this.view((await this.store.get(row.id))!) };
  }

  private async repeat(existing: RuntimeRow, requestHash: string) {
    if (existing.requestHash !== requestHash) throw tradingErrors.idempotencyKeyReused(existing.id);
    return { created: false, runtime: await this.view(existing) };
  }

  async list(userId: string, page: Page) {
    return Promise.all((await this.store.list(userId, page)).map((row) => this.view(row)));
  }

  async get(userId: string, runtimeId: string) {
    return this.view(await this.owned(userId, runtimeId));
  }

  async setStatus(userId: string, runtimeId: string, requested: Requested) {
    const current = await this.owned(userId, runtimeId);
    if (current.status === requested) return this.view(current);
    const moved = await this.store.move(this.ctx.db, runtimeId, MOVES[requested], requested, null, this.ctx.clock.now());
    if (!moved) {
      const now = (await this.store.get(runtimeId))!;
      throw tradingErrors.illegalTransition(now.status, requested);
    }
    await this.alignSoon(moved);
    return this.view((await this.store.get(runtimeId))!);
  }

  /** A manual run at this instant, on the same path as a scheduled tick; answers its first execution (leg 0: a tick of several orders lists each). */
  async runNow(userId: string, runtimeId: string) {
    const runtime = await this.owned(userId, runtimeId);
    if (runtime.status !== 'active') throw tradingErrors.notActive(runtime.status);
    const sealed = await this.sealed(runtime);
    const at = this.ctx.clock.now();
    const result = await this.tick(runtimeId, 'manual', at);
    // Two runs asked at the same millisecond are one tick: the later one answers the tick's execution.
    if (!result.ran && result.reason === 'done') return executionView((await this.store.execution(runtimeId, 'manual', at))!, sealed);
    if (!result.ran && result.reason === 'placing') throw tradingErrors.orderPlacing();
    if (!result.ran) throw tradingErrors.notActive(result.status ?? runtime.status);
    if (result.movedToReview) await this.alignSoon(result.runtime);
    return executionView(result.executions[0]!, sealed);
  }

  /**
   * The owner's flatten: every position closed, largest first, one order (one `flatten` execution) each,
   * until the book is flat or an order does not fill (halted by the kill switch, rejected by the venue).
   */
  async flatten(userId: string, runtimeId: string) {
    const runtime = await this.owned(userId, runtimeId);
    if (!FLATTENABLE.includes(runtime.status)) throw tradingErrors.notFlattenable(runtime.status);
    const sealed = await this.sealed(runtime);
    const start = this.ctx.clock.now().getTime();
    const executions = [];
    // One order per position; the bound only stops a book that somehow never empties.
    for (let i = 0; i <= Object.keys((runtime.book as Book).positions).length; i++) {
      const current = (await this.store.get(runtimeId))!;
      if (Object.keys((current.book as Book).positions).length === 0) break;
      const at = new Date(start + i);
      const result = await this.tick(runtimeId, 'flatten', at);
      if (!result.ran && result.reason === 'placing') throw tradingErrors.orderPlacing();
      if (!result.ran && result.reason !== 'done') throw tradingErrors.notFlattenable(result.status ?? current.status);
      const execution = result.ran ? result.executions[0]! : (await this.store.execution(runtimeId, 'flatten', at))!;
      executions.push(executionView(execution, sealed));
      if (result.ran && result.movedToReview) await this.alignSoon(result.runtime);
      // Done once an order did not fill, or none was placed (what is left is under one lot: dust, engine.ts).
      if (execution.status !== 'completed' || (execution.order as { status?: string } | null)?.status !== 'filled') break;
    }
    return { runtime: await this.view((await this.store.get(runtimeId))!), executions };
  }

  /** One tick now; a failure (recorded on its execution by the runner) is 503 execution_failed, never a 500. */
  private async tick(runtimeId: string, trigger: TickTrigger, at: Date) {
    try {
      return await this.runner.run(runtimeId, trigger, at, 1);
    } catch (error) {
      this.ctx.log.warn({ err: error, runtimeId, trigger }, 'a run asked for by the owner failed');
      throw tradingErrors.executionFailed(error instanceof Error ? error.message.slice(0, 300) : String(error));
    }
  }

  async executions(userId: string, runtimeId: string, limit: number, before: string | null) {
    const sealed = await this.sealed(await this.owned(userId, runtimeId));
    return (await this.store.executions(runtimeId, limit, before)).map((row) => executionView(row, sealed));
  }

  /** Makes the schedule follow a move now; if that fails, the reconciler's loop does it. */
  async alignSoon(runtime: AlignTarget): Promise<void> {
    await this.reconciler.align(runtime).catch((error) => this.ctx.log.warn({ err: error, runtimeId: runtime.id }, 'aligning a runtime failed; the reconciler will retry'));
  }

  private async owned(userId: string, runtimeId: string): Promise<RuntimeRow> {
    const row = await this.store.get(runtimeId);
    if (!row || row.userId !== userId) throw tradingErrors.runtimeNotFound();
    return row;
  }

  /** Whether the runtime runs another owner's priced strategy: its executions' decisions are then sealed (views.ts). */
  private async sealed(row: RuntimeRow): Promise<boolean> {
    const { strategy } = (await this.catalog.store.version(row.strategyVersionId))!;
    return isPricedFor(strategy, row.userId);
  }

  /**
   * The runtime with its book marked at the feed's current prices; a position whose price the feed cannot give
   * now (a live venue's stale or unreachable ticker, a gap in imported data) is shown at its average price.
   */
  private async view(row: RuntimeRow) {
    const version = (await this.catalog.store.version(row.strategyVersionId))!.version;
    const book = row.book as Book;
    const at = this.ctx.clock.now();
    const feed = this.feedFor(version);
    const priced = await Promise.all(Object.keys(book.positions).map(async (symbol) => [symbol, await feed.price(symbol, at).catch(() => null)] as const));
    const prices = Object.fromEntries(priced.filter((entry): entry is readonly [string, number] => entry[1] !== null));
    return runtimeView(row, version, bookView(book, prices, at));
  }
}
