import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import { rowsOf, toDate, type Timestamp } from '../../platform/sql-rows.js';
import type { Db, Executor } from '../../platform/db.js';
import type { Book } from './book.js';
import { tradingAccounts, tradingExecutions, tradingRuntimes, type KillSwitchMode, type RuntimeStatus } from './tables.js';

export type RuntimeRow = typeof tradingRuntimes.$inferSelect;
export type ExecutionRow = typeof tradingExecutions.$inferSelect;

/** What a tick reads of its runtime (tickState). */
export interface TickState {
  id: string;
  status: RuntimeStatus;
  scheduleId: string | null;
  strategyVersionId: string;
  fundLimitUsd: number;
  maxLeverage: number;
  maxDrawdownPercent: number;
  book: Book;
  bookVersion: number;
  killSwitch: KillSwitchMode;
  tickStatus: string | null;
}

/**
 * Statements on runtimes and executions. Concurrency, stated once:
 *  - every status move is one UPDATE whose WHERE names the statuses it may leave, so of two racing
 *    moves one matches no row;
 *  - a tick reads its runtime without a lock and commits in one statement that changes the book only
 *    over the version it read, and only while the runtime is active (optimistic: ticks of different
 *    runtimes never wait on each other, a pause between read and commit wins);
 *  - a tick's execution is inserted only where none but a failed one exists: the unique (runtime,
 *    trigger, scheduledAt) makes a tick delivered twice, or to two workers, run once.
 */
export class RuntimeStore {
  constructor(readonly db: Db) {}

  async insert(row: RuntimeRow): Promise<RuntimeRow> {
    const [created] = await this.db.insert(tradingRuntimes).values(row).returning();
    return created!;
  }

  async byIdempotencyKey(userId: string, key: string): Promise<RuntimeRow | null> {
    const [row] = await this.db.select().from(tradingRuntimes).where(and(eq(tradingRuntimes.userId, userId), eq(tradingRuntimes.idempotencyKey, key)));
    return row ?? null;
  }

  async get(id: string): Promise<RuntimeRow | null> {
    const [row] = await this.db.select().from(tradingRuntimes).where(eq(tradingRuntimes.id, id));
    return row ?? null;
  }

  async list(userId: string): Promise<RuntimeRow[]> {
    return this.db.select().from(tradingRuntimes).where(eq(tradingRuntimes.userId, userId)).orderBy(desc(tradingRuntimes.id)).limit(500);
  }

  /** Moves the runtime from one of `from` to `to`; null when it was in none of them (a lost race or an illegal move). */
  async move(executor: Executor, id: string, from: readonly RuntimeStatus[], to: RuntimeStatus, reason: string | null, now: Date): Promise<RuntimeRow | null> {
    const [row] = await executor
      .update(tradingRuntimes)
      .set({ status: to, statusReason: reason, updatedAt: now })
      .where(and(eq(tradingRuntimes.id, id), inArray(tradingRuntimes.status, [...from])))
      .returning();
    return row ?? null;
  }

  async setSchedule(id: string, scheduleId: string): Promise<void> {
    await this.db.update(tradingRuntimes).set({ scheduleId }).where(eq(tradingRuntimes.id, id));
  }

  /** Records that the schedule now matches `status`, if the runtime is still in it. */
  async markAligned(id: string, status: RuntimeStatus): Promise<void> {
    await this.db.update(tradingRuntimes).set({ scheduleState: status }).where(and(eq(tradingRuntimes.id, id), eq(tradingRuntimes.status, status)));
  }

  /** Runtimes whose schedule does not match their status (provisioning ones among them). */
  async unaligned(limit: number): Promise<RuntimeRow[]> {
    return this.db
      .select()
      .from(tradingRuntimes)
      .where(sql`${tradingRuntimes.scheduleState} is distinct from ${tradingRuntimes.status}`)
      .orderBy(tradingRuntimes.id)
      .limit(limit);
  }

  /**
   * What a tick reads, in one snapshot: the runtime (with its book and its version), its account's kill
   * switch, and the status of this tick's execution if one is recorded.
   */
  async tickState(id: string, triggerType: string, scheduledAt: Date): Promise<TickState | null> {
    const [row] = await rowsOf<TickState>(
      this.db,
      sql`select r.id, r.status, r.schedule_id as "scheduleId", r.strategy_version_id as "strategyVersionId",
                 r.fund_limit_usd as "fundLimitUsd", r.max_leverage as "maxLeverage", r.max_drawdown_percent as "maxDrawdownPercent",
                 r.book, r.book_version as "bookVersion", a.kill_switch as "killSwitch",
                 (select e.status from trading_executions e
                   where e.runtime_id = r.id and e.trigger_type = ${triggerType} and e.scheduled_at = ${scheduledAt.toISOString()}::timestamptz) as "tickStatus"
            from trading_runtimes r join trading_accounts a on a.id = r.account_id
           where r.id = ${id}::uuid`,
    );
    if (!row) return null;
    return { ...row, book: typeof row.book === 'string' ? JSON.parse(row.book) : row.book, fundLimitUsd: Number(row.fundLimitUsd), maxLeverage: Number(row.maxLeverage), maxDrawdownPercent: Number(row.maxDrawdownPercent) };
  }

  /**
   * A tick's outcome, in one statement: the runtime's new book (and needs_review on a breach) if the
   * runtime is still active with the book version the tick read, and then, only if it was, the tick's
   * execution (taking over a failed one). Null when the runtime changed since the read: the caller
   * reads again. Two runs of one tick cannot both commit: the second read either sees the first's
   * execution, or holds a book version the first has moved on from.
   */
  async commitTick(input: { bookVersion: number; book: Book; status: 'active' | 'needs_review'; reason: string | null; execution: ExecutionRow }): Promise<ExecutionRow | null> {
    const e = input.execution;
    const json = (value: unknown) => (value === null ? null : JSON.stringify(value));
    const [row] = await rowsOf<{ id: string; createdAt: Timestamp }>(
      this.db,
      sql`with moved as (
            update trading_runtimes
               set book = ${JSON.stringify(input.book)}::jsonb, book_version = book_version + 1, status = ${input.status},
                   status_reason = case when ${input.status} = 'needs_review' then ${input.reason} else status_reason end,
                   updated_at = ${e.completedAt!.toISOString()}::timestamptz
             where id = ${e.runtimeId}::uuid and book_version = ${input.bookVersion} and status = 'active'
            returning id)
          insert into trading_executions (id, runtime_id, trigger_type, scheduled_at, status, attempt_count, strategy_version_hash,
                                          inputs_digest, decision, risk_assessment, "order", error, created_at, completed_at)
          select ${e.id}::uuid, moved.id, ${e.triggerType}, ${e.scheduledAt.toISOString()}::timestamptz, ${e.status}, ${e.attemptCount}::int,
                 ${e.strategyVersionHash}, ${e.inputsDigest}, ${json(e.decision)}::jsonb, ${json(e.riskAssessment)}::jsonb, ${json(e.order)}::jsonb,
                 null, ${e.createdAt.toISOString()}::timestamptz, ${e.completedAt!.toISOString()}::timestamptz
            from moved
          on conflict (runtime_id, trigger_type, scheduled_at) do update
             set status = excluded.status, attempt_count = excluded.attempt_count, inputs_digest = excluded.inputs_digest,
                 decision = excluded.decision, risk_assessment = excluded.risk_assessment, "order" = excluded."order",
                 error = null, completed_at = excluded.completed_at
           where trading_executions.status = 'failed'
          returning id, created_at as "createdAt"`,
    );
    // A failed execution taken over keeps its id and creation time.
    return row ? { ...e, id: row.id, createdAt: toDate(row.createdAt), error: null } : null;
  }

  /** A tick that threw: recorded failed (or a failed one's attempt count moved on); a finished one is left alone. */
  async recordFailure(row: ExecutionRow): Promise<void> {
    await this.db
      .insert(tradingExecutions)
      .values(row)
      .onConflictDoUpdate({
        target: [tradingExecutions.runtimeId, tradingExecutions.triggerType, tradingExecutions.scheduledAt],
        set: { attemptCount: row.attemptCount, error: row.error },
        setWhere: sql`${tradingExecutions.status} = 'failed'`,
      });
  }

  async executions(runtimeId: string, limit: number, before: string | null): Promise<ExecutionRow[]> {
    return this.db
      .select()
      .from(tradingExecutions)
      .where(and(eq(tradingExecutions.runtimeId, runtimeId), before ? lt(tradingExecutions.id, before) : undefined))
      .orderBy(desc(tradingExecutions.id))
      .limit(limit);
  }
}
