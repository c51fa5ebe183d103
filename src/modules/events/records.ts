import { isoTime } from '../../platform/iso-time.js';
import type { EventRow, EventStatus } from './event-rows.js';
import type { QueueRow } from './queue-store.js';
import type { BackfillPolicy, OverlapPolicy, ScheduleRow, SyncStatus } from './schedule-store.js';

// Rows -> API records. The only place that decides what a client sees of each resource.

export const queueRecord = (row: QueueRow) => ({
  id: row.id,
  name: row.name,
  status: row.status as 'active',
  defaultLeaseSeconds: row.defaultLeaseSeconds,
  maxAttempts: row.maxAttempts,
  retentionSeconds: row.retentionSeconds,
  createdAt: isoTime(row.createdAt),
  updatedAt: isoTime(row.updatedAt),
});

/**
 * The status a reader should see now. A lease that ran out is over even before the sweeper
 * records it, so it reads as what the sweeper will make of it.
 */
export function effectiveStatus(row: EventRow, now: Date): EventStatus {
  if (row.status !== 'leased' || (row.leaseExpiresAt && row.leaseExpiresAt > now)) return row.status;
  if (row.attempts >= row.maxAttempts) return 'dead';
  if (row.expiresAt && row.expiresAt <= now) return 'expired';
  return 'available';
}

const iso = (date: Date | null) => (date ? isoTime(date) : null);

export function eventRecord(row: EventRow, now: Date) {
  const status = effectiveStatus(row, now);
  return {
    id: row.id,
    queueId: row.queueId,
    scheduleId: row.scheduleId,
    status,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.maxAttempts,
    deduplicationKey: row.deduplicationKey,
    availableAt: isoTime(row.availableAt),
    leaseExpiresAt: status === 'leased' ? iso(row.leaseExpiresAt) : null,
    scheduledFor: iso(row.scheduledFor),
    expiresAt: iso(row.expiresAt),
    lastError: row.lastError,
    createdAt: isoTime(row.createdAt),
    updatedAt: isoTime(row.updatedAt),
    finishedAt: iso(row.finishedAt),
  };
}

export type EventRecord = ReturnType<typeof eventRecord>;

export const scheduleRecord = (row: ScheduleRow) => ({
  id: row.id,
  queueId: row.queueId,
  externalId: row.externalId,
  name: row.name,
  schedule: { type: 'cron' as const, expression: row.cronExpression, timezone: row.timezone },
  payload: row.payload as Record<string, unknown>,
  overlapPolicy: row.overlapPolicy as OverlapPolicy,
  maxConcurrency: row.maxConcurrency,
  maxEventAgeSeconds: row.maxEventAgeSeconds,
  backfill: row.backfill as BackfillPolicy,
  paused: row.pausedAt !== null,
  pausedAt: iso(row.pausedAt),
  sync: {
    status: row.syncStatus as SyncStatus,
    revision: row.revision,
    syncedRevision: row.syncedRevision,
    lastError: row.lastError,
  },
  nextFireAt: iso(row.nextFireAt),
  lastFiredAt: iso(row.lastFiredAt),
  createdAt: isoTime(row.createdAt),
  updatedAt: isoTime(row.updatedAt),
});

export type ScheduleRecord = ReturnType<typeof scheduleRecord>;
