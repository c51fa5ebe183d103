import { and, desc, eq, getTableColumns, inArray, lt, sql } from 'drizzle-orm';
import { databaseNow, type Clock } from '../../../platform/clock.js';
import type { Db } from '../../../platform/db.js';
import { tradingBacktestJobs, type BacktestJobStatus } from '../tables.js';

export type BacktestJobRow = typeof tradingBacktestJobs.$inferSelect;

// Statements on trading_backtest_jobs. Every state change is one conditional UPDATE whose WHERE names the state
// it expects, so a lost race matches no row:
//  - a worker claims a job (queued, or running with a lapsed lease: its worker died) with SKIP LOCKED, so two
//    workers never take the same one; the lease is the database's clock (databaseNow), not a node's;
//  - a worker's saves (progress, checkpoint) and its finish name the lease it holds (owner and status running):
//    once another worker took the job over, or the owner cancelled it, they match nothing and it stops;
//  - cancel moves a queued job to cancelled, or flags a running one (its worker stops at its next save);
//    resume moves a cancelled or failed job back to queued, checkpoint kept.
export class BacktestJobStore {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async insert(row: Pick<BacktestJobRow, 'id' | 'userId' | 'strategyId' | 'kind' | 'input' | 'progressTotal'>): Promise<BacktestJobRow> {
    const now = this.clock.now();
    const [inserted] = await this.db
      .insert(tradingBacktestJobs)
      .values({ ...row, status: 'queued', createdAt: now, updatedAt: now })
      .returning();
    return inserted!;
  }

  async get(id: string): Promise<BacktestJobRow | null> {
    const [row] = await this.db.select().from(tradingBacktestJobs).where(eq(tradingBacktestJobs.id, id));
    return row ?? null;
  }

  /** The user's jobs, newest first (ids are time-ordered), without their results or checkpoints (GET one for its result). */
  async ofUser(userId: string, limit: number, before: string | null): Promise<Array<Omit<BacktestJobRow, 'result' | 'checkpoint'>>> {
    const { result: _result, checkpoint: _checkpoint, ...listed } = getTableColumns(tradingBacktestJobs);
    return this.db
      .select(listed)
      .from(tradingBacktestJobs)
      .where(and(eq(tradingBacktestJobs.userId, userId), before ? lt(tradingBacktestJobs.id, before) : undefined))
      .orderBy(desc(tradingBacktestJobs.id))
      .limit(limit);
  }

  /** The oldest job a worker may run, now held by `owner` for `leaseMs`: queued, or running with a lapsed lease. */
  async claim(owner: string, leaseMs: number): Promise<BacktestJobRow | null> {
    const now = databaseNow(this.clock);
    const [row] = await this.db
      .update(tradingBacktestJobs)
      .set({ status: 'running', leaseOwner: owner, leaseExpiresAt: sql`${now} + ${leaseMs} * interval '1 millisecond'`, attempts: sql`${tradingBacktestJobs.attempts} + 1`, updatedAt: this.clock.now() })
      .where(
        eq(
          tradingBacktestJobs.id,
          sql`(select id from trading_backtest_jobs
                where status = 'queued' or (status = 'running' and lease_expires_at < ${now})
                order by created_at limit 1 for update skip locked)`,
        ),
      )
      .returning();
    return row ?? null;
  }

  /**
   * The holder's save: progress, and (when given) the checkpoint, its lease renewed. Answers whether it should go
   * on: false when it holds the job no more (taken over, or cancelled while queued again) or was asked to cancel.
   */
  async save(id: string, owner: string, leaseMs: number, progressDone: number, checkpoint?: unknown): Promise<boolean> {
    const now = databaseNow(this.clock);
    const rows = await this.db
      .update(tradingBacktestJobs)
      .set({ progressDone, ...(checkpoint === undefined ? {} : { checkpoint }), leaseExpiresAt: sql`${now} + ${leaseMs} * interval '1 millisecond'`, updatedAt: this.clock.now() })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.leaseOwner, owner), eq(tradingBacktestJobs.status, 'running')))
      .returning({ cancelRequested: tradingBacktestJobs.cancelRequested });
    return rows.length === 1 && !rows[0]!.cancelRequested;
  }

  /** running → succeeded, failed or cancelled, by its holder only. */
  async finish(id: string, owner: string, end: { status: Extract<BacktestJobStatus, 'succeeded' | 'failed' | 'cancelled'>; result?: unknown; error?: string; progressDone?: number; checkpoint?: unknown }): Promise<boolean> {
    const now = this.clock.now();
    const rows = await this.db
      .update(tradingBacktestJobs)
      .set({
        status: end.status,
        ...(end.result === undefined ? {} : { result: end.result, checkpoint: null }),
        ...(end.checkpoint === undefined ? {} : { checkpoint: end.checkpoint }),
        ...(end.progressDone === undefined ? {} : { progressDone: end.progressDone }),
        error: end.error ?? null,
        cancelRequested: false,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: now,
        finishedAt: now,
      })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.leaseOwner, owner), eq(tradingBacktestJobs.status, 'running')))
      .returning({ id: tradingBacktestJobs.id });
    return rows.length === 1;
  }

  /** The holder gives a running job back (its worker is stopping): queued again at `checkpoint`, for the next worker. */
  async release(id: string, owner: string, progressDone: number, checkpoint: unknown): Promise<boolean> {
    const rows = await this.db
      .update(tradingBacktestJobs)
      .set({ status: 'queued', progressDone, checkpoint, leaseOwner: null, leaseExpiresAt: null, updatedAt: this.clock.now() })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.leaseOwner, owner), eq(tradingBacktestJobs.status, 'running')))
      .returning({ id: tradingBacktestJobs.id });
    return rows.length === 1;
  }

  /** The owner's cancel: a queued job ends cancelled now; a running one is flagged for its worker. Null: neither. */
  async cancel(id: string, userId: string): Promise<BacktestJobRow | null> {
    const now = this.clock.now();
    const [queued] = await this.db
      .update(tradingBacktestJobs)
      .set({ status: 'cancelled', updatedAt: now, finishedAt: now })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.userId, userId), eq(tradingBacktestJobs.status, 'queued')))
      .returning();
    if (queued) return queued;
    const [running] = await this.db
      .update(tradingBacktestJobs)
      .set({ cancelRequested: true, updatedAt: now })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.userId, userId), eq(tradingBacktestJobs.status, 'running')))
      .returning();
    return running ?? null;
  }

  /** cancelled or failed → queued, its checkpoint kept (the next worker resumes from it). Null when it is in another status. */
  async resume(id: string, userId: string): Promise<BacktestJobRow | null> {
    const [row] = await this.db
      .update(tradingBacktestJobs)
      .set({ status: 'queued', cancelRequested: false, error: null, finishedAt: null, updatedAt: this.clock.now() })
      .where(and(eq(tradingBacktestJobs.id, id), eq(tradingBacktestJobs.userId, userId), inArray(tradingBacktestJobs.status, ['cancelled', 'failed'])))
      .returning();
    return row ?? null;
  }
}
