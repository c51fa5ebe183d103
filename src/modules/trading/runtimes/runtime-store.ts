import { and, desc, eq, gt, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import { databaseNow, type Clock } from '../../../platform/clock.js';
import { rowsOf, toDate, type Timestamp } from '../../../platform/sql-rows.js';
import type { Db, Executor } from '../../../platform/db.js';
import type { Book } from '../engine/book.js';
import type { AccountRisk } from '../engine/risk.js';
import type { Page } from '../store.js';
import { tradingExecutions, tradingRuntimes, type KillSwitchMode, type RuntimeStatus } from '../tables.js';

export type RuntimeRow = typeof tradingRuntimes.$inferSelect;
export type ExecutionRow = typeof tradingExecutions.$inferSelect;

/** What a tick reads of its runtime (tickStates). */
export interface TickState {
  id: string;
  scheduledAt: Date;
  status: RuntimeStatus;
  scheduleId: string | null;
  cronExpression: string;
  strategyVersionId: string;
  fundLimitUsd: number;
  maxLeverage: number;
  maxDrawdownPercent: number;
  book: Book;
  bookVersion: number;
  killSwitch: KillSwitchMode;
  /** The account-wide limit, and the positions its other runtimes hold (their last committed books). */
  account: AccountRisk;
  /** The account and its agent wallet, which pays a metered tick. */
  accountId: string;
  walletId: string;
  /** The status of the tick's first leg, if the tick is recorded. */
  tickStatus: string | null;
  /** The runtime's executions whose orders were claimed for a live venue and not filled yet, in leg order (the legs of one tick: ticks.ts); empty when none. */
  placing: PlacingExecution[];
}

/** With the decision's risk assessment: the order is valued again at the venue's quote before it is sent (quote-check.ts). */
export type PlacingExecution = Pick<ExecutionRow, 'id' | 'triggerType' | 'scheduledAt' | 'leg' | 'decision' | 'order' | 'riskAssessment'>;

/** The placing executions as tickStates reads them (a JSON array, their times strings). */
const placingOf = (value: unknown): PlacingExecution[] => {
  const list = (typeof value === 'string' ? JSON.parse(value) : (value ?? [])) as Array<PlacingExecution & { scheduledAt: string }>;
  return list.map((p) => ({ ...p, scheduledAt: new Date(p.scheduledAt) }));
};

/** A tick's outcome to commit over the book version it read (commitTicks). */
export interface TickCommit {
  bookVersion: number;
  book: Book;
  /** The statuses the runtime may be in for the commit to hold (a strategy's tick: active only). */
  from: readonly RuntimeStatus[];
  /** Where the runtime goes; null keeps the status it has (the owner's flatten moves none). */
  status: RuntimeStatus | null;
  /** Why the runtime moved to needs_review; null keeps the reason it has. */
  reason: string | null;
  /** The tick's executions, one per leg (0, 1, …), all committed or none. */
  executions: ExecutionRow[];
}

/**
 * Statements on runtimes and executions. Concurrency, stated once:
 *  - every status move is one UPDATE whose WHERE names the statuses it may leave, so of two racing
 *    moves one matches no row;
 *  - a tick reads its runtime without a lock and commits in one statement that changes the book only
 *    over the version it read, and only while the runtime is active (optimistic: ticks of different
 *    runtimes never wait on each other, a pause between read and commit wins);
 *  - a tick's executions (one per order, its legs) are inserted with its book in that statement, only
 *    where none but a failed one exists: the unique (runtime, trigger, scheduledAt, leg) makes a tick
 *    delivered twice, or to two workers, run once;
 *  - a live venue's orders are claimed that way first (executions `placing`, the book version moved on)
 *    and placed after, leg by leg, each by one caller at a time (takePlacement); each fill commits over
 *    the version the leg before it left (commitFill).
 */
export class RuntimeStore {
  /** `clock` only shifts the database's clock in tests (databaseNow): placement leases run on the database's. */
  constructor(
    readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * The end of a placement lease `ms` from now by the database's clock, so nodes whose clocks disagree still
   * agree on who holds it; whole milliseconds, so the value a caller reads back compares equal when renewed.
   */
  private leaseEnd(ms: number) {
    return sql`date_trunc('milliseconds', ${databaseNow(this.clock)} + ${ms} * interval '1 millisecond')`;
  }

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

  async list(userId: string, page: Page): Promise<RuntimeRow[]> {
    return this.db
      .select()
      .from(tradingRuntimes)
      .where(and(eq(tradingRuntimes.userId, userId), page.before ? lt(tradingRuntimes.id, page.before) : undefined))
      .orderBy(desc(tradingRuntimes.id))
      .limit(page.limit);
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

  /** Records the status the schedule was last made to match, whatever the runtime's status is now. */
  async setScheduleState(id: string, status: RuntimeStatus): Promise<void> {
    await this.db.update(tradingRuntimes).set({ scheduleState: status }).where(eq(tradingRuntimes.id, id));
  }

  /** Runtimes whose schedule does not match their status (provisioning ones among them). */
  async unaligned(limit: number, afterId: string | null): Promise<RuntimeRow[]> {
    return this.db
      .select()
      .from(tradingRuntimes)
      .where(and(sql`${tradingRuntimes.scheduleState} is distinct from ${tradingRuntimes.status}`, afterId ? gt(tradingRuntimes.id, afterId) : undefined))
      .orderBy(tradingRuntimes.id)
      .limit(limit);
  }

  /**
   * What ticks read, in one snapshot: per (runtime, scheduledAt) asked for, the runtime (with its book and
   * its version), its account's kill switch, and the status of that tick's execution if one is recorded.
   * Runtimes that do not exist are left out.
   */
  async tickStates(triggerType: string, ticks: readonly { runtimeId: string; scheduledAt: Date }[]): Promise<TickState[]> {
    const rows = await rowsOf<Omit<TickState, 'account'> & { scheduledAt: Timestamp; maxExposureUsd: number | string | null; otherPositions: unknown }>(
      this.db,
      sql`select r.id, t.scheduled_at as "scheduledAt", r.status, r.schedule_id as "scheduleId", r.cron_expression as "cronExpression", r.strategy_version_id as "strategyVersionId",
                 r.fund_limit_usd as "fundLimitUsd", r.max_leverage as "maxLeverage", r.max_drawdown_percent as "maxDrawdownPercent",
                 r.book, r.book_version as "bookVersion", a.kill_switch as "killSwitch", a.max_exposure_usd as "maxExposureUsd",
                 (select coalesce(jsonb_agg(o.book->'positions'), '[]'::jsonb) from trading_runtimes o
                   where a.max_exposure_usd is not null and o.account_id = a.id and o.id <> r.id and o.status not in ('stopped', 'failed')) as "otherPositions",
                 a.id as "accountId", a.wallet_id as "walletId",
                 (select e.status from trading_executions e
                   where e.runtime_id = r.id and e.trigger_type = ${triggerType} and e.scheduled_at = t.scheduled_at and e.leg = 0) as "tickStatus",
                 (select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'triggerType', p.trigger_type, 'scheduledAt', p.scheduled_at, 'leg', p.leg, 'decision', p.decision, 'order', p."order", 'riskAssessment', p.risk_assessment)
                                            order by p.scheduled_at, p.leg), '[]'::jsonb)
                    from trading_executions p where p.runtime_id = r.id and p.status = 'placing') as placing
            from unnest(${sql.param(ticks.map((t) => t.runtimeId))}::uuid[], ${sql.param(ticks.map((t) => t.scheduledAt.toISOString()))}::timestamptz[]) as t(runtime_id, scheduled_at)
            join trading_runtimes r on r.id = t.runtime_id
            join trading_accounts a on a.id = r.account_id`,
    );
    return rows.map(({ maxExposureUsd, otherPositions, ...row }) => ({
      ...row,
      account: { maxExposureUsd: maxExposureUsd === null ? null : Number(maxExposureUsd), otherPositions: (typeof otherPositions === 'string' ? JSON.parse(otherPositions) : otherPositions) as AccountRisk['otherPositions'] },
      placing: placingOf(row.placing),
      scheduledAt: toDate(row.scheduledAt),
      book: typeof row.book === 'string' ? JSON.parse(row.book) : row.book,
      fundLimitUsd: Number(row.fundLimitUsd),
      maxLeverage: Number(row.maxLeverage),
      maxDrawdownPercent: Number(row.maxDrawdownPercent),
    }));
  }

  /**
   * Ticks' outcomes, in one statement (at most one tick per runtime): each runtime's new book (and
   * needs_review on a breach) where the runtime is still in a status its tick may commit from (active for
   * a strategy's tick) with the book version its tick read,
   * and then, only for those, the tick's executions, every leg (taking over a failed one). Answers the
   * executions that were committed; a tick missing from the answer lost a race (its runtime changed since
   * the read) and is read again. Two runs of one tick cannot both commit: the second read either sees the
   * first's executions, or holds a book version the first has moved on from. A claimed order (`placing`)
   * is held by its committer for `leaseMs` from the commit (its `placingUntil` in the answer).
   */
  async commitTicks(commits: readonly TickCommit[], leaseMs: number): Promise<ExecutionRow[]> {
    if (commits.length === 0) return [];
    // One row per leg; the runtime's move (book, status) rides on leg 0.
    const input = commits.flatMap(({ bookVersion, book, from, status, reason, executions }) =>
      executions.map((e) => ({
        runtime_id: e.runtimeId,
        leg: e.leg,
        ...(e.leg === 0 ? { book_version: bookVersion, book, from_statuses: from.join(','), status, reason } : {}),
        id: e.id,
        trigger_type: e.triggerType,
        scheduled_at: e.scheduledAt.toISOString(),
        execution_status: e.status,
        attempt_count: e.attemptCount,
        strategy_version_hash: e.strategyVersionHash,
        inputs_digest: e.inputsDigest,
        decision: e.decision,
        risk_assessment: e.riskAssessment,
        order: e.order,
        error: e.error,
        created_at: e.createdAt.toISOString(),
        completed_at: e.completedAt?.toISOString() ?? null,
      })),
    );
    const rows = await rowsOf<{ id: string; runtimeId: string; leg: number; createdAt: Timestamp; placingUntil: Timestamp | null }>(
      this.db,
      sql`with input as (
            select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as x(
              runtime_id uuid, leg int, book_version int, book jsonb, from_statuses text, status text, reason text, id uuid, trigger_type text, scheduled_at timestamptz,
              execution_status text, attempt_count int, strategy_version_hash text, inputs_digest text, decision jsonb, risk_assessment jsonb,
              "order" jsonb, error jsonb, created_at timestamptz, completed_at timestamptz)),
          moved as (
            update trading_runtimes r
               set book = i.book, book_version = r.book_version + 1, status = coalesce(i.status, r.status),
                   status_reason = coalesce(i.reason, r.status_reason), updated_at = i.created_at
              from input i
             where i.leg = 0 and r.id = i.runtime_id and r.book_version = i.book_version and r.status = any(string_to_array(i.from_statuses, ','))
            returning r.id)
          insert into trading_executions (id, runtime_id, trigger_type, scheduled_at, leg, status, attempt_count, strategy_version_hash,
                                          inputs_digest, decision, risk_assessment, "order", error, created_at, completed_at, placing_until)
          select i.id, i.runtime_id, i.trigger_type, i.scheduled_at, i.leg, i.execution_status, i.attempt_count, i.strategy_version_hash,
                 i.inputs_digest, i.decision, i.risk_assessment, i."order", i.error, i.created_at, i.completed_at,
                 case when i.execution_status = 'placing' then ${this.leaseEnd(leaseMs)} end
            from input i join moved m on m.id = i.runtime_id
          on conflict (runtime_id, trigger_type, scheduled_at, leg) do update
             set status = excluded.status, attempt_count = excluded.attempt_count, inputs_digest = excluded.inputs_digest,
                 decision = excluded.decision, risk_assessment = excluded.risk_assessment, "order" = excluded."order",
                 error = excluded.error, completed_at = excluded.completed_at, placing_until = excluded.placing_until
           where trading_executions.status = 'failed'
          returning id, runtime_id as "runtimeId", leg, created_at as "createdAt", placing_until as "placingUntil"`,
    );
    // A failed execution taken over keeps its id and creation time.
    const byLeg = new Map(commits.flatMap((c) => c.executions.map((e) => [`${e.runtimeId}:${e.leg}`, e] as const)));
    return rows
      .map((row) => ({ ...byLeg.get(`${row.runtimeId}:${row.leg}`)!, id: row.id, createdAt: toDate(row.createdAt), placingUntil: row.placingUntil === null ? null : toDate(row.placingUntil) }))
      .sort((a, b) => a.leg - b.leg);
  }

  /**
   * A live order's fill: the book after it, over the book its claim left (nothing else moves a book while
   * an order is placing), and its execution completed, both or neither. False when another worker
   * recorded this fill first.
   */
  async commitFill(fill: { executionId: string; runtimeId: string; bookVersion: number; book: Book; order: unknown; attempt: number; at: Date }): Promise<ExecutionRow | null> {
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with moved as (
            update trading_runtimes set book = ${JSON.stringify(fill.book)}::jsonb, book_version = book_version + 1, updated_at = ${fill.at.toISOString()}
             where id = ${fill.runtimeId} and book_version = ${fill.bookVersion}
            returning id)
          update trading_executions
             set status = 'completed', "order" = ${JSON.stringify(fill.order)}::jsonb, error = null, completed_at = ${fill.at.toISOString()},
                 attempt_count = greatest(attempt_count, ${fill.attempt})
           where id = ${fill.executionId} and status = 'placing' and exists (select 1 from moved)
          returning id`,
    );
    if (rows.length === 0) return null;
    const [row] = await this.db.select().from(tradingExecutions).where(eq(tradingExecutions.id, fill.executionId));
    return row ?? null;
  }

  /**
   * Takes the placement of a claimed order at the venue once no one holds it (the claiming tick holds it
   * from its commit): the lease's end this caller now holds it by, for `leaseMs`, or null. Two callers never
   * place at once.
   */
  async takePlacement(executionId: string, leaseMs: number): Promise<Date | null> {
    const [row] = await this.db
      .update(tradingExecutions)
      .set({ placingUntil: this.leaseEnd(leaseMs) })
      .where(and(eq(tradingExecutions.id, executionId), eq(tradingExecutions.status, 'placing'), or(isNull(tradingExecutions.placingUntil), lte(tradingExecutions.placingUntil, databaseNow(this.clock)))))
      .returning({ placingUntil: tradingExecutions.placingUntil });
    return row?.placingUntil ?? null;
  }

  /**
   * Renews the placement this caller holds (`held`: the lease's end it took or committed) for `leaseMs`: the
   * new end, or null when another caller took it since (the lease lapsed), and then this one must not place.
   */
  async renewPlacement(executionId: string, held: Date, leaseMs: number): Promise<Date | null> {
    const [row] = await this.db
      .update(tradingExecutions)
      .set({ placingUntil: this.leaseEnd(leaseMs) })
      .where(and(eq(tradingExecutions.id, executionId), eq(tradingExecutions.status, 'placing'), eq(tradingExecutions.placingUntil, held)))
      .returning({ placingUntil: tradingExecutions.placingUntil });
    return row?.placingUntil ?? null;
  }

  /**
   * A live order that filled nothing, over the book its claim left (the book stays): refused by the venue
   * (execution `rejected` with the venue's words, an active or paused runtime handed to review with
   * `review` as its reason), a limit order that found no price (execution `completed`, `review` null,
   * the runtime runs on), or an order not sent because the venue's quote failed its re-check (execution
   * `blocked`, quote-check.ts; the runtime runs on). Null when another worker recorded this order's outcome first.
   */
  async commitNoFill(outcome: { executionId: string; runtimeId: string; bookVersion: number; status: 'rejected' | 'completed' | 'blocked'; order: unknown; error: unknown; review: string | null; at: Date }): Promise<ExecutionRow | null> {
    const { review } = outcome;
    const at = outcome.at.toISOString();
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with moved as (
            update trading_runtimes
               set book_version = book_version + 1, updated_at = ${at},
                   status = case when ${review}::text is not null and status in ('active', 'paused') then 'needs_review' else status end,
                   status_reason = case when ${review}::text is not null and status in ('active', 'paused') then ${review}::text else status_reason end
             where id = ${outcome.runtimeId} and book_version = ${outcome.bookVersion}
            returning id)
          update trading_executions
             set status = ${outcome.status}, "order" = ${JSON.stringify(outcome.order)}::jsonb, error = ${outcome.error === null ? null : JSON.stringify(outcome.error)}::jsonb, completed_at = ${at}
           where id = ${outcome.executionId} and status = 'placing' and exists (select 1 from moved)
          returning id`,
    );
    if (rows.length === 0) return null;
    const [row] = await this.db.select().from(tradingExecutions).where(eq(tradingExecutions.id, outcome.executionId));
    return row ?? null;
  }

  /**
   * A tick that threw: recorded failed (or a failed one's attempt count moved on); a placing one keeps
   * its status (its order may be out) and records the error; a finished one is left alone.
   */
  async recordFailure(row: ExecutionRow): Promise<void> {
    await this.db
      .insert(tradingExecutions)
      .values(row)
      .onConflictDoUpdate({
        target: [tradingExecutions.runtimeId, tradingExecutions.triggerType, tradingExecutions.scheduledAt, tradingExecutions.leg],
        set: { attemptCount: sql`greatest(${tradingExecutions.attemptCount}, ${row.attemptCount})`, error: row.error },
        setWhere: sql`${tradingExecutions.status} in ('failed', 'placing')`,
      });
  }

  /** The first execution (leg 0) of one tick. */
  async execution(runtimeId: string, triggerType: string, scheduledAt: Date): Promise<ExecutionRow | null> {
    return (await this.tickExecutions(runtimeId, triggerType, scheduledAt))[0] ?? null;
  }

  /** Every execution of one tick, one per order, in leg order. */
  async tickExecutions(runtimeId: string, triggerType: string, scheduledAt: Date): Promise<ExecutionRow[]> {
    return this.db
      .select()
      .from(tradingExecutions)
      .where(and(eq(tradingExecutions.runtimeId, runtimeId), eq(tradingExecutions.triggerType, triggerType), eq(tradingExecutions.scheduledAt, scheduledAt)))
      .orderBy(tradingExecutions.leg);
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
