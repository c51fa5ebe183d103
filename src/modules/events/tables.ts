import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, pgTable, primaryKey, smallint, text, timestamp, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';
import { LIMITS } from './limits.js';

// Tables of the Events area. Project ids are the projects module's ids, kept as text without a
// foreign key: a module owns its tables, and events must not depend on another module's schema.

/** Pull-based queues; a name is unique within its project. */
export const eventQueues = pgTable(
  'event_queues',
  {
    id: uuid('id').primaryKey(),
    projectId: text('project_id').notNull(),
    name: text('name').notNull(),
    status: text('status').notNull().default('active'),
    defaultLeaseSeconds: integer('default_lease_seconds').notNull(),
    maxAttempts: integer('max_attempts').notNull(),
    /** Leases of this queue's events that ran out without ack or nack (sweeper and claim takeovers count them). */
    leaseExpiries: bigint('lease_expiries', { mode: 'number' }).notNull().default(0),
    /** Finished events (acked, dead, expired, superseded) are purged this long after they finished. */
    retentionSeconds: integer('retention_seconds').notNull().default(LIMITS.defaultRetentionSeconds),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [unique('event_queues_project_name_unique').on(t.projectId, t.name)],
);

/**
 * Cron schedules that enqueue events. `revision` counts accepted definitions; the scheduler copies
 * it to `synced_revision` once it has registered that definition. `next_fire_at` is advanced with a
 * conditional update in the same transaction that inserts the tick's event (exactly-once firing).
 */
export const eventSchedules = pgTable(
  'event_schedules',
  {
    id: uuid('id').primaryKey(),
    projectId: text('project_id').notNull(),
    queueId: uuid('queue_id')
      .notNull()
      .references(() => eventQueues.id, { onDelete: 'cascade' }),
    externalId: text('external_id').notNull(),
    name: text('name').notNull(),
    cronExpression: text('cron_expression').notNull(),
    timezone: text('timezone').notNull(),
    payload: guardedJsonb('payload').notNull(),
    overlapPolicy: text('overlap_policy').notNull(),
    maxConcurrency: integer('max_concurrency'),
    maxEventAgeSeconds: integer('max_event_age_seconds'),
    /** Ticks missed while no scheduler ran: `none`, `latest` (default) or `all` (see scheduler.ts). */
    backfill: text('backfill').notNull().default('latest'),
    /** Set while paused: no ticks fire; resuming starts again from the first tick after it. */
    pausedAt: timestamp('paused_at', { withTimezone: true }),
    syncStatus: text('sync_status').notNull(),
    revision: integer('revision').notNull(),
    syncedRevision: integer('synced_revision'),
    lastError: text('last_error'),
    nextFireAt: timestamp('next_fire_at', { withTimezone: true }),
    lastFiredAt: timestamp('last_fired_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('event_schedules_project_external_unique').on(t.projectId, t.externalId),
    index('event_schedules_pending_idx').on(t.updatedAt).where(sql`${t.syncStatus} = 'pending'`),
    index('event_schedules_due_idx').on(t.nextFireAt).where(sql`${t.syncStatus} = 'synced'`),
  ],
);

/**
 * Events. While an event is `leased`, `available_at` equals `lease_expires_at`: one index range
 * (`available_at <= now` over open statuses) finds both fresh events and expired leases, oldest first.
 * `lease_token_hash` stays after the lease ends so a late call with that token gets a precise answer.
 */
export const events = pgTable(
  'events',
  {
    id: uuid('id').primaryKey(),
    projectId: text('project_id').notNull(),
    // No foreign key: its check was a lookup per inserted row (a third of a batch publish's statement).
    // Every insert statement reads its queue row FOR KEY SHARE instead (its own query), and a queue's delete
    // removes its events itself (queue-store.ts).
    queueId: uuid('queue_id').notNull(),
    // No foreign key: an event keeps naming the schedule that made it after the schedule is deleted.
    scheduleId: uuid('schedule_id'),
    scheduledFor: timestamp('scheduled_for', { withTimezone: true }),
    deduplicationKey: text('deduplication_key'),
    payload: guardedJsonb('payload').notNull(),
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    maxAttempts: integer('max_attempts').notNull(),
    availableAt: timestamp('available_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    leaseTokenHash: text('lease_token_hash'),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    index('events_claim_idx')
      .on(t.queueId, t.availableAt, t.id)
      .where(sql`${t.status} in ('available', 'leased')`),
    uniqueIndex('events_queue_dedup_unique')
      .on(t.queueId, t.deduplicationKey)
      .where(sql`${t.deduplicationKey} is not null`),
    // Exactly one event per schedule tick, whatever the scheduler does twice.
    uniqueIndex('events_schedule_tick_unique')
      .on(t.scheduleId, t.scheduledFor)
      .where(sql`${t.scheduleId} is not null`),
    index('events_schedule_open_idx')
      .on(t.scheduleId)
      .where(sql`${t.scheduleId} is not null and ${t.status} in ('available', 'leased')`),
    // The retention purge (finished events of a queue, oldest first) and, with the claim index, a queue's
    // delete. Partial, so open events (most of the writes) add no entry to it.
    index('events_queue_finished_idx').on(t.queueId, t.finishedAt).where(sql`${t.finishedAt} is not null`),
    // finished_at is set exactly while an event is terminal: so the claim index (open events) and the
    // one above (finished ones) hold every event between them, which a queue's delete relies on.
    check('events_finished_when_terminal', sql`(${t.status} in ('available', 'leased')) = (${t.finishedAt} is null)`),
    // Dead letters of a queue, newest first (list, redrive).
    index('events_dead_idx').on(t.queueId, t.id).where(sql`${t.status} = 'dead'`),
    index('events_leased_idx').on(t.availableAt).where(sql`${t.status} = 'leased'`),
    index('events_expiring_idx').on(t.expiresAt).where(sql`${t.status} = 'available' and ${t.expiresAt} is not null`),
  ],
);

/**
 * How many events of a queue are in each terminal state, so stats never count history. Every
 * statement that moves events into or out of a terminal state (ack, nack, sweeps, supersede, redrive,
 * purge) adds its delta here in the same statement (counts.ts). A queue's count is the sum of its
 * slots: each database backend writes its own slot (pid modulo the slots), so concurrent acks of one
 * queue do not wait on one row's lock until each other's commit. No foreign key: an insert here
 * would take a key-share lock on the queue row, which a concurrent queue delete (waiting for the
 * ack's event row) holds: a deadlock. The queue delete removes its rows instead.
 */
export const eventQueueCounts = pgTable(
  'event_queue_counts',
  {
    queueId: uuid('queue_id').notNull(),
    slot: smallint('slot').notNull(),
    acked: bigint('acked', { mode: 'number' }).notNull().default(0),
    dead: bigint('dead', { mode: 'number' }).notNull().default(0),
    expired: bigint('expired', { mode: 'number' }).notNull().default(0),
    superseded: bigint('superseded', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ name: 'event_queue_counts_pkey', columns: [t.queueId, t.slot] })],
);
