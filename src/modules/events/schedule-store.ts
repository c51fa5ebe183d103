import { and, asc, desc, eq, isNotNull, isNull, lte, sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf, toDate, type Timestamp } from '../../platform/sql-rows.js';
import { eventSchedules } from './tables.js';
import { jsonText } from '../../platform/db-types.js';
import { tally } from './counts.js';

export type ScheduleRow = typeof eventSchedules.$inferSelect;
export type OverlapPolicy = 'all' | 'skip' | 'latest';
export type BackfillPolicy = 'none' | 'latest' | 'all';
export type SyncStatus = 'pending' | 'synced' | 'error';

/** The caller-supplied part of a schedule; a change to any of it is a new revision. */
export interface ScheduleDefinition {
  queueId: string;
  name: string;
  cronExpression: string;
  timezone: string;
  payload: Record<string, unknown>;
  overlapPolicy: OverlapPolicy;
  maxConcurrency: number | null;
  maxEventAgeSeconds: number | null;
  backfill: BackfillPolicy;
}

export type UpsertOutcome = 'created' | 'updated' | 'unchanged';
export type FireOutcome = 'fired' | 'skipped' | 'lost';

type RawSchedule = Omit<ScheduleRow, 'nextFireAt' | 'lastFiredAt' | 'pausedAt' | 'createdAt' | 'updatedAt'> & {
  nextFireAt: Timestamp | null;
  pausedAt: Timestamp | null;
  lastFiredAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
};

const SCHEDULE_COLUMNS = sql.raw(
  `s.id, s.project_id as "projectId", s.queue_id as "queueId", s.external_id as "externalId", s.name,
   s.cron_expression as "cronExpression", s.timezone, s.payload, s.overlap_policy as "overlapPolicy",
   s.max_concurrency as "maxConcurrency", s.max_event_age_seconds as "maxEventAgeSeconds", s.backfill, s.paused_at as "pausedAt",
   s.sync_status as "syncStatus", s.revision, s.synced_revision as "syncedRevision", s.last_error as "lastError",
   s.next_fire_at as "nextFireAt", s.last_fired_at as "lastFiredAt", s.created_at as "createdAt", s.updated_at as "updatedAt"`,
);

const toScheduleRow = (raw: RawSchedule): ScheduleRow => ({
  ...raw,
  nextFireAt: toDate(raw.nextFireAt),
  pausedAt: toDate(raw.pausedAt),
  lastFiredAt: toDate(raw.lastFiredAt),
  createdAt: toDate(raw.createdAt),
  updatedAt: toDate(raw.updatedAt),
});

export class ScheduleStore {
  constructor(private readonly db: Executor) {}

  /**
   * Creates the schedule of (project, externalId) at revision 1, or, when the definition differs,
   * bumps its revision and sends it back to `pending` (the scheduler re-registers it). An identical
   * definition changes nothing. One statement, so concurrent upserts serialize on the unique key.
   */
  async upsert(input: { id: string; projectId: string; externalId: string; definition: ScheduleDefinition; now: Date }): Promise<{ row: ScheduleRow; outcome: UpsertOutcome }> {
    const d = input.definition;
    const payload = jsonText(d.payload);
    const rows = await rowsOf<RawSchedule & { inserted: boolean }>(
      this.db,
      sql`insert into event_schedules as s (id, project_id, queue_id, external_id, name, cron_expression, timezone, payload,
                 overlap_policy, max_concurrency, max_event_age_seconds, backfill, sync_status, revision, created_at, updated_at)
          values (${input.id}, ${input.projectId}, ${d.queueId}, ${input.externalId}, ${d.name}, ${d.cronExpression},
                  ${d.timezone}, ${payload}::jsonb, ${d.overlapPolicy}, ${d.maxConcurrency}::int, ${d.maxEventAgeSeconds}::int,
                  ${d.backfill}, 'pending', 1, ${input.now}, ${input.now})
          on conflict (project_id, external_id) do update set
                 queue_id = excluded.queue_id, name = excluded.name, cron_expression = excluded.cron_expression,
                 timezone = excluded.timezone, payload = excluded.payload, overlap_policy = excluded.overlap_policy,
                 max_concurrency = excluded.max_concurrency, max_event_age_seconds = excluded.max_event_age_seconds,
                 backfill = excluded.backfill, revision = s.revision + 1, sync_status = 'pending', last_error = null, next_fire_at = null,
                 updated_at = excluded.updated_at
          where (s.queue_id, s.name, s.cron_expression, s.timezone, s.payload, s.overlap_policy, s.max_concurrency,
                 s.max_event_age_seconds, s.backfill)
                is distinct from
                (excluded.queue_id, excluded.name, excluded.cron_expression, excluded.timezone, excluded.payload,
                 excluded.overlap_policy, excluded.max_concurrency, excluded.max_event_age_seconds, excluded.backfill)
          returning ${SCHEDULE_COLUMNS}, (s.xmax = 0) as inserted`,
    );
    if (rows[0]) {
      const { inserted, ...raw } = rows[0];
      return { row: toScheduleRow(raw), outcome: inserted ? 'created' : 'updated' };
    }
    const existing = await this.findByExternalId(input.projectId, input.externalId);
    if (!existing) throw new Error('schedule upsert matched a row that is gone');
    return { row: existing, outcome: 'unchanged' };
  }

  async findByExternalId(projectId: string, externalId: string): Promise<ScheduleRow | null> {
    const [row] = await this.db
      .select()
      .from(eventSchedules)
      .where(and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.externalId, externalId)))
      .limit(1);
    return row ?? null;
  }

  async get(projectId: string, id: string): Promise<ScheduleRow | null> {
    const [row] = await this.db
      .select()
      .from(eventSchedules)
      .where(and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.id, id)))
      .limit(1);
    return row ?? null;
  }

  async list(projectId: string, queueId: string | null): Promise<ScheduleRow[]> {
    const scope = queueId
      ? and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.queueId, queueId))
      : eq(eventSchedules.projectId, projectId);
    return this.db.select().from(eventSchedules).where(scope).orderBy(desc(eventSchedules.id));
  }

  async delete(projectId: string, id: string): Promise<boolean> {
    const rows = await this.db
      .delete(eventSchedules)
      .where(and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.id, id)))
      .returning({ id: eventSchedules.id });
    return rows.length > 0;
  }

  /** Pauses the schedule (no ticks fire while paused); null when it is not the project's. Repeating it changes nothing. */
  async pause(projectId: string, id: string, now: Date): Promise<ScheduleRow | null> {
    const [row] = await this.db
      .update(eventSchedules)
      .set({ pausedAt: now, updatedAt: now })
      .where(and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.id, id), isNull(eventSchedules.pausedAt)))
      .returning();
    return row ?? this.get(projectId, id);
  }

  /**
   * Resumes a paused schedule. Its registration is redone (`pending`, same revision), so its next
   * tick is the first after now: ticks that fell in the pause are not backfilled.
   */
  async resume(projectId: string, id: string, now: Date): Promise<ScheduleRow | null> {
    const [row] = await this.db
      .update(eventSchedules)
      .set({
        pausedAt: null,
        syncStatus: sql`case when ${eventSchedules.syncStatus} = 'synced' then 'pending' else ${eventSchedules.syncStatus} end`,
        nextFireAt: null,
        updatedAt: now,
      })
      .where(and(eq(eventSchedules.projectId, projectId), eq(eventSchedules.id, id), isNotNull(eventSchedules.pausedAt)))
      .returning();
    return row ?? this.get(projectId, id);
  }

  /** Schedules whose current revision the scheduler has not registered yet, oldest change first. */
  async pendingSync(limit: number): Promise<ScheduleRow[]> {
    return this.db
      .select()
      .from(eventSchedules)
      .where(eq(eventSchedules.syncStatus, 'pending'))
      .orderBy(asc(eventSchedules.updatedAt))
      .limit(limit);
  }

  /** Records the sync result of one revision; a newer revision accepted meanwhile wins (no row). */
  async finishSync(input: { id: string; revision: number; now: Date } & ({ ok: true; nextFireAt: Date } | { ok: false; error: string })): Promise<boolean> {
    const rows = await this.db
      .update(eventSchedules)
      .set(
        input.ok
          ? { syncStatus: 'synced', syncedRevision: input.revision, lastError: null, nextFireAt: input.nextFireAt, updatedAt: input.now }
          : { syncStatus: 'error', lastError: input.error, nextFireAt: null, updatedAt: input.now },
      )
      .where(and(eq(eventSchedules.id, input.id), eq(eventSchedules.revision, input.revision), eq(eventSchedules.syncStatus, 'pending')))
      .returning({ id: eventSchedules.id });
    return rows.length > 0;
  }

  async due(now: Date, limit: number): Promise<ScheduleRow[]> {
    return this.db
      .select()
      .from(eventSchedules)
      .where(and(eq(eventSchedules.syncStatus, 'synced'), lte(eventSchedules.nextFireAt, now), isNull(eventSchedules.pausedAt)))
      .orderBy(asc(eventSchedules.nextFireAt))
      .limit(limit);
  }

  /**
   * Fires one tick; run inside a transaction. The conditional advance of `next_fire_at` lets exactly
   * one scheduler win the tick, and the unique (schedule_id, scheduled_for) index backs it up.
   * `tick` is null when the due tick is not delivered (too old): the schedule only advances.
   * A null `nextFireAt` (no future tick) leaves the schedule synced but never due again.
   */
  async fire(input: { schedule: ScheduleRow; tick: Date | null; nextFireAt: Date | null; eventId: string; now: Date }): Promise<FireOutcome> {
    const { schedule, tick, now } = input;
    const advanced = await this.db
      .update(eventSchedules)
      .set({ nextFireAt: input.nextFireAt, ...(tick ? { lastFiredAt: tick } : {}), updatedAt: now })
      .where(
        and(
          eq(eventSchedules.id, schedule.id),
          eq(eventSchedules.revision, schedule.revision),
          eq(eventSchedules.syncStatus, 'synced'),
          eq(eventSchedules.nextFireAt, schedule.nextFireAt!),
          isNull(eventSchedules.pausedAt),
        ),
      )
      .returning({ id: eventSchedules.id });
    if (advanced.length === 0) return 'lost';
    if (!tick) return 'skipped';

    if (schedule.overlapPolicy === 'skip') {
      const open = await rowsOf<{ id: string }>(
        this.db,
        sql`select id from events where schedule_id = ${schedule.id} and status in ('available', 'leased')
              and (expires_at is null or expires_at > ${now}) limit 1`,
      );
      if (open.length > 0) return 'skipped';
    } else if (schedule.overlapPolicy === 'latest') {
      await this.db.execute(
        sql`with dropped as (
              update events set status = 'superseded', finished_at = ${now}, updated_at = ${now},
                     last_error = 'superseded: a newer tick of the schedule was enqueued'
              where schedule_id = ${schedule.id} and status = 'available'
              returning queue_id, status
            ), tallied as (${tally(sql`dropped`)})
            select 1`,
      );
    }

    const expiresAt = schedule.maxEventAgeSeconds === null ? null : new Date(tick.getTime() + schedule.maxEventAgeSeconds * 1000);
    const inserted = await rowsOf<{ id: string }>(
      this.db,
      sql`insert into events (id, project_id, queue_id, schedule_id, scheduled_for, payload, status, attempts,
                              max_attempts, available_at, expires_at, created_at, updated_at)
          select ${input.eventId}, q.project_id, q.id, ${schedule.id}, ${tick}, ${jsonText(schedule.payload)}::jsonb,
                 'available', 0, q.max_attempts, ${now}, ${expiresAt}::timestamptz, ${now}, ${now}
          from event_queues q where q.id = ${schedule.queueId}
          for key share of q
          on conflict (schedule_id, scheduled_for) where schedule_id is not null do nothing
          returning id`,
    );
    return inserted.length > 0 ? 'fired' : 'skipped';
  }
}
