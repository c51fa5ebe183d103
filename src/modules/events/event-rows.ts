import { toDate, type Timestamp } from '../../platform/sql-rows.js';

// The `events` row: as the drivers return it (snake_case, timestamps as the driver gives them) and as
// the module reads it. Its own file because every events file speaks it (stores, services, records),
// while only the stores speak SQL.

export type EventStatus = 'available' | 'leased' | 'acked' | 'dead' | 'expired' | 'superseded';

export interface EventRow {
  id: string;
  projectId: string;
  queueId: string;
  scheduleId: string | null;
  scheduledFor: Date | null;
  deduplicationKey: string | null;
  payload: Record<string, unknown>;
  status: EventStatus;
  attempts: number;
  maxAttempts: number;
  availableAt: Date;
  expiresAt: Date | null;
  leaseTokenHash: string | null;
  leaseExpiresAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

/** An `events` row as the drivers return it. */
export interface RawEventRow {
  id: string;
  project_id: string;
  queue_id: string;
  schedule_id: string | null;
  scheduled_for: Timestamp | null;
  deduplication_key: string | null;
  payload: Record<string, unknown>;
  status: EventStatus;
  attempts: number;
  max_attempts: number;
  available_at: Timestamp;
  expires_at: Timestamp | null;
  lease_token_hash: string | null;
  lease_expires_at: Timestamp | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: Timestamp | null;
}

export function toEventRow(raw: RawEventRow): EventRow {
  return {
    id: raw.id,
    projectId: raw.project_id,
    queueId: raw.queue_id,
    scheduleId: raw.schedule_id,
    scheduledFor: toDate(raw.scheduled_for),
    deduplicationKey: raw.deduplication_key,
    payload: raw.payload,
    status: raw.status,
    attempts: raw.attempts,
    maxAttempts: raw.max_attempts,
    availableAt: toDate(raw.available_at),
    expiresAt: toDate(raw.expires_at),
    leaseTokenHash: raw.lease_token_hash,
    leaseExpiresAt: toDate(raw.lease_expires_at),
    lastError: raw.last_error,
    createdAt: toDate(raw.created_at),
    updatedAt: toDate(raw.updated_at),
    finishedAt: toDate(raw.finished_at),
  };
}
