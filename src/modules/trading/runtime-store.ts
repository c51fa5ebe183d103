import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../platform/db.js';
import type { Book } from './book.js';
import { tradingAccounts, tradingExecutions, tradingRuntimes, type KillSwitchMode, type RuntimeStatus } from './tables.js';

export type RuntimeRow = typeof tradingRuntimes.$inferSelect;
export type ExecutionRow = typeof tradingExecutions.$inferSelect;

/**
 * Statements on runtimes and executions. Concurrency, stated once:
 *  - every status move is one UPDATE whose WHERE names the statuses it may leave, so of two racing
 *    moves one matches no row;
 *  - an execution runs under its runtime's row lock (`lockForTick`), so a runtime's book changes one
 *    execution at a time, and a tick's row is inserted only where none but a failed one exists: the
 *    unique (runtime, trigger, scheduledAt) makes a tick delivered twice, or to two workers, run once.
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

  /** The runtime, locked until the transaction ends, with its account's kill switch. */
  async lockForTick(tx: Executor, id: string): Promise<{ runtime: RuntimeRow; killSwitch: KillSwitchMode } | null> {
    const [row] = await tx
      .select({ runtime: tradingRuntimes, killSwitch: tradingAccounts.killSwitch })
      .from(tradingRuntimes)
      .innerJoin(tradingAccounts, eq(tradingAccounts.id, tradingRuntimes.accountId))
      .where(eq(tradingRuntimes.id, id))
      .for('update', { of: tradingRuntimes });
    return row ?? null;
  }

  /** The status of the tick's execution, if one is recorded. */
  async tickStatus(tx: Executor, runtimeId: string, triggerType: string, scheduledAt: Date): Promise<string | null> {
    const [row] = await tx
      .select({ status: tradingExecutions.status })
      .from(tradingExecutions)
      .where(and(eq(tradingExecutions.runtimeId, runtimeId), eq(tradingExecutions.triggerType, triggerType), eq(tradingExecutions.scheduledAt, scheduledAt)));
    return row?.status ?? null;
  }

  /** Inserts the tick's execution, or takes over a failed one; null when a finished one is there. */
  async recordExecution(executor: Executor, row: ExecutionRow): Promise<ExecutionRow | null> {
    const { id: _id, runtimeId: _r, triggerType: _t, scheduledAt: _s, createdAt: _c, ...outcome } = row;
    const [saved] = await executor
      .insert(tradingExecutions)
      .values(row)
      .onConflictDoUpdate({
        target: [tradingExecutions.runtimeId, tradingExecutions.triggerType, tradingExecutions.scheduledAt],
        set: outcome,
        setWhere: sql`${tradingExecutions.status} = 'failed'`,
      })
      .returning();
    return saved ?? null;
  }

  async saveBook(tx: Executor, id: string, book: Book, now: Date): Promise<void> {
    await tx.update(tradingRuntimes).set({ book, updatedAt: now }).where(eq(tradingRuntimes.id, id));
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
