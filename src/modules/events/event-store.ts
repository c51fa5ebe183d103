import { sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf, toDate, type Timestamp } from './rows.js';
import { jsonText } from '../../platform/db-types.js';

// SQL of events. Every state change is ONE conditional UPDATE (status, token hash and expiry in its
// WHERE), so two racing calls can never both win: the loser matches no row and is told why.
// Statements are kept plain (`returning *`, few joins): on PGlite planning dominates their cost.

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

/** An event (alias `e`) that may be handed out now: open, due, within its age limit, attempts left. */
const CLAIMABLE = (now: SQL) => sql`
  e.status in ('available', 'leased') and e.available_at <= ${now}
  and (e.status = 'available' or e.attempts < e.max_attempts)
  and (e.expires_at is null or e.expires_at > ${now})`;

/** now + the lease: the given seconds, or the queue's defaultLeaseSeconds. */
const LEASE_END = (now: SQL, leaseSeconds: number | null, queueId: SQL) =>
  sql`${now} + make_interval(secs => coalesce(${leaseSeconds}::int,
        (select default_lease_seconds from event_queues where id = ${queueId})))`;

export interface PublishInput {
  id: string;
  projectId: string;
  queueId: string;
  payload: Record<string, unknown>;
  deduplicationKey: string | null;
  delaySeconds: number;
  now: Date;
}

export type ClaimAttempt =
  | { kind: 'claimed'; row: EventRow }
  | { kind: 'capped'; eventId: string; scheduleId: string }
  | { kind: 'none' };

export interface LeaseInput {
  eventId: string;
  projectId: string;
  tokenHash: string;
  now: Date;
}

export interface EventStoreOptions {
  /**
   * Lease changes (claim, heartbeat, ack, nack, sweeps) commit without waiting for the WAL flush
   * (synchronous_commit off for that statement's transaction only). A crash can then undo the last
   * moments of them, which at-least-once delivery tolerates: the event is delivered again. Publishes
   * and schedule ticks always commit durably, so no event is ever lost. Off by default: an ack the
   * caller saw succeed stays acked across a crash; the option trades that for throughput.
   */
  asyncLeaseCommits: boolean;
  /**
   * Time every lease decision by the database's `now()`, not the node's clock: nodes whose clocks
   * disagree then still agree on when a lease ends, so one lease is never held twice. Off only for
   * tests that move time by hand (the passed `now` is used instead).
   */
  databaseTime: boolean;
}

export class EventStore {
  /** A FROM item of every lease statement: switches its implicit transaction to an async commit. */
  private readonly commitMode: SQL;

  constructor(
    private readonly db: Executor,
    private readonly options: EventStoreOptions = { asyncLeaseCommits: false, databaseTime: true },
  ) {
    this.commitMode = sql.raw(
      options.asyncLeaseCommits ? `(select set_config('synchronous_commit', 'off', true)) as commit_mode` : `(select 1) as commit_mode`,
    );
  }

  /** The statement's "now": see EventStoreOptions.databaseTime. */
  private at(now: Date): SQL {
    return this.options.databaseTime ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
  }

  /**
   * Inserts the event into the project's queue (durable commit). Null when nothing was inserted:
   * the queue is missing or the deduplication key was used.
   */
  async insert(input: PublishInput): Promise<EventRow | null> {
    const now = this.at(input.now);
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`insert into events (id, project_id, queue_id, payload, deduplication_key, status, attempts,
                              max_attempts, available_at, created_at, updated_at)
          select ${input.id}, q.project_id, q.id, ${jsonText(input.payload)}::jsonb, ${input.deduplicationKey},
                 'available', 0, q.max_attempts, ${now} + make_interval(secs => ${input.delaySeconds}::int), ${now}, ${now}
          from event_queues q where q.id = ${input.queueId} and q.project_id = ${input.projectId}
          on conflict (queue_id, deduplication_key) where deduplication_key is not null do nothing
          returning *`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  async findByDeduplicationKey(projectId: string, queueId: string, key: string): Promise<EventRow | null> {
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`select * from events where queue_id = ${queueId} and deduplication_key = ${key} and project_id = ${projectId}`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  async get(projectId: string, eventId: string): Promise<EventRow | null> {
    const rows = await rowsOf<RawEventRow>(this.db, sql`select * from events where id = ${eventId} and project_id = ${projectId}`);
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /** Dead events of a queue, newest first; `before` is the id of the last event of the previous page. */
  async listDead(projectId: string, queueId: string, limit: number, before: string | null): Promise<EventRow[]> {
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`select * from events
          where queue_id = ${queueId} and status = 'dead' and project_id = ${projectId}
            ${before ? sql`and id < ${before}` : sql``}
          order by id desc limit ${limit}`,
    );
    return rows.map(toEventRow);
  }

  /**
   * One statement: lock the oldest claimable event of the project's queue (SKIP LOCKED) and lease
   * it. An event of a schedule with a concurrency cap is not leased here: when nothing was leased, a
   * second look reports the oldest such event (`capped`), for the caller to lease under the schedule's
   * row lock. `none` also covers "no such queue in this project".
   */
  async claimNext(input: {
    projectId: string;
    queueId: string;
    leaseSeconds: number | null;
    tokenHash: string;
    now: Date;
    skipSchedules: readonly string[];
  }): Promise<ClaimAttempt> {
    const now = this.at(input.now);
    const skip = input.skipSchedules.length
      ? sql`and (e.schedule_id is null or not (e.schedule_id = any(${`{${input.skipSchedules.join(',')}}`}::uuid[])))`
      : sql``;
    const oldest = (filter: SQL) => sql`select e.id, e.schedule_id from events e
      where e.queue_id = ${input.queueId} and e.project_id = ${input.projectId} and ${CLAIMABLE(now)} ${skip} ${filter}
      order by e.available_at, e.id limit 1`;
    const capped = sql`exists (select 1 from event_schedules s where s.id = e.schedule_id and s.max_concurrency is not null)`;
    const leaseEnd = LEASE_END(now, input.leaseSeconds, sql`e.queue_id`);
    const claimed = await rowsOf<RawEventRow>(
      this.db,
      sql`update events e set status = 'leased', attempts = e.attempts + 1, lease_token_hash = ${input.tokenHash},
                 lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
          from ${this.commitMode}
          where e.id = (select id from (${oldest(sql``)} for update skip locked) as head)
            and (e.schedule_id is null or not ${capped})
          returning e.*`,
    );
    if (claimed[0]) return { kind: 'claimed', row: toEventRow(claimed[0]) };
    // Empty, or the oldest event is held back for its schedule's cap: look (without locking) for one.
    const [held] = await rowsOf<{ id: string; schedule_id: string }>(this.db, oldest(sql`and e.schedule_id is not null and ${capped}`));
    return held ? { kind: 'capped', eventId: held.id, scheduleId: held.schedule_id } : { kind: 'none' };
  }

  /** Leases one specific event if it is still claimable (the capped-schedule path, inside its lock). */
  async claimById(input: { eventId: string; leaseSeconds: number | null; tokenHash: string; now: Date }): Promise<EventRow | null> {
    const now = this.at(input.now);
    const leaseEnd = LEASE_END(now, input.leaseSeconds, sql`e.queue_id`);
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`update events e set status = 'leased', attempts = e.attempts + 1, lease_token_hash = ${input.tokenHash},
                 lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
          from ${this.commitMode}
          where e.id = ${input.eventId} and ${CLAIMABLE(now)}
          returning e.*`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /** Leased events of a schedule whose lease is still running. */
  async countActiveLeases(scheduleId: string, at: Date): Promise<number> {
    const now = this.at(at);
    const rows = await rowsOf<{ count: number }>(
      this.db,
      sql`select count(*)::int as count from events
          where schedule_id = ${scheduleId} and status = 'leased' and lease_expires_at > ${now}`,
    );
    return rows[0]?.count ?? 0;
  }

  /** Undoes a claim nobody received (the client left while it ran): the attempt does not count. */
  async unclaim(eventId: string, tokenHash: string, at: Date): Promise<void> {
    const now = this.at(at);
    await rowsOf(
      this.db,
      sql`update events e set status = 'available', attempts = e.attempts - 1, available_at = ${now},
                 lease_token_hash = null, lease_expires_at = null, updated_at = ${now}
          from ${this.commitMode}
          where e.id = ${eventId} and e.status = 'leased' and e.lease_token_hash = ${tokenHash}`,
    );
  }

  /** Extends a running lease to now + leaseSeconds (the queue's default when null). */
  async heartbeat(input: LeaseInput & { leaseSeconds: number | null }): Promise<EventRow | null> {
    const now = this.at(input.now);
    const leaseEnd = LEASE_END(now, input.leaseSeconds, sql`e.queue_id`);
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`update events e set lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
          from ${this.commitMode}
          where e.id = ${input.eventId} and e.project_id = ${input.projectId} and ${LEASE_HELD(input.tokenHash, now)}
          returning e.*`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  async ack(input: LeaseInput): Promise<EventRow | null> {
    const now = this.at(input.now);
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`update events e set status = 'acked', lease_expires_at = null, finished_at = ${now}, updated_at = ${now}
          from ${this.commitMode}
          where e.id = ${input.eventId} and e.project_id = ${input.projectId} and ${LEASE_HELD(input.tokenHash, now)}
          returning e.*`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /**
   * Ends the lease with a failure: back to `available` after the delay, or `dead` when this was the
   * last attempt. A null delay means the default backoff, min(base^attempts, cap) seconds.
   */
  async nack(input: LeaseInput & { error: string; retryDelaySeconds: number | null; backoff: { base: number; cap: number } }): Promise<EventRow | null> {
    const now = this.at(input.now);
    const exhausted = sql`e.attempts >= e.max_attempts`;
    const delay = sql`coalesce(${input.retryDelaySeconds}::int, least(power(${input.backoff.base}::int, e.attempts), ${input.backoff.cap}::int))`;
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`update events e set
                 status = case when ${exhausted} then 'dead' else 'available' end,
                 available_at = case when ${exhausted} then e.available_at
                                     else ${now} + make_interval(secs => ${delay}) end,
                 finished_at = case when ${exhausted} then ${now} end,
                 last_error = ${input.error}, lease_expires_at = null, updated_at = ${now}
          from ${this.commitMode}
          where e.id = ${input.eventId} and e.project_id = ${input.projectId} and ${LEASE_HELD(input.tokenHash, now)}
          returning e.*`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /**
   * Ends leases that ran out: `dead` when that was the last attempt, `expired` past the event's age
   * limit, else `available` again (claims already treat them so; this makes reads say it).
   */
  async sweepExpiredLeases(at: Date, limit: number): Promise<number> {
    const now = this.at(at);
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with due as (
            select id from events where status = 'leased' and available_at <= ${now}
            order by available_at limit ${limit} for update skip locked
          )
          update events e set
                 status = case when e.attempts >= e.max_attempts then 'dead'
                               when e.expires_at is not null and e.expires_at <= ${now} then 'expired'
                               else 'available' end,
                 finished_at = case when e.attempts >= e.max_attempts or (e.expires_at is not null and e.expires_at <= ${now})
                                    then ${now} end,
                 last_error = 'lease_expired: no ack or nack before ' || to_char(e.lease_expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 updated_at = ${now}
          from due, ${this.commitMode} where e.id = due.id
          returning e.id`,
    );
    return rows.length;
  }

  /** Marks waiting events past their age limit (`expires_at`) as `expired`; they are never delivered. */
  async sweepAgedEvents(at: Date, limit: number): Promise<number> {
    const now = this.at(at);
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with due as (
            select id from events where status = 'available' and expires_at is not null and expires_at <= ${now}
            order by expires_at limit ${limit} for update skip locked
          )
          update events e set status = 'expired', finished_at = ${now},
                 last_error = 'max_event_age_exceeded: not delivered before ' || to_char(e.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 updated_at = ${now}
          from due, ${this.commitMode} where e.id = due.id
          returning e.id`,
    );
    return rows.length;
  }
}

/** The caller holds the event's current lease: leased, same token, not yet expired. */
const LEASE_HELD = (tokenHash: string, now: SQL) =>
  sql`e.status = 'leased' and e.lease_token_hash = ${tokenHash} and e.lease_expires_at > ${now}`;
