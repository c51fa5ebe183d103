import { sql, type SQL } from 'drizzle-orm';
import { rowsOf } from '../../platform/sql-rows.js';
import { jsonText } from '../../platform/db-types.js';
import { tally } from './counts.js';
import { toEventRow, type EventStatus, type EventRow, type RawEventRow } from './event-rows.js';
import { EventReadStore } from './event-read-store.js';

// SQL that changes events: publishing, claims, lease changes, redrive and the sweeps (the reads are in
// event-read-store.ts, this class's base; the row shapes in event-rows.ts).
// Every state change is ONE conditional UPDATE (status, token hash and expiry in its
// WHERE), so two racing calls can never both win: the loser matches no row and is told why.
// Statements are kept plain (`returning *`, few joins): on PGlite planning dominates their cost.
// A statement that finishes events (or un-finishes them: redrive) also adds to the queue's terminal
// counts in a CTE of its own (counts.ts), so stats never count finished events.

/** An event (alias `e`) that may be handed out now: open, due, within its age limit, attempts left. */
export const CLAIMABLE = (now: SQL) => sql`
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
  /** `tookOver`: the event was leased before and that lease ran out (a lease expiry). */
  | { kind: 'claimed'; row: EventRow; tookOver: boolean }
  | { kind: 'capped'; eventId: string; scheduleId: string }
  /** Nothing to lease; `queueFound` false: the project has no such queue. */
  | { kind: 'none'; queueFound: boolean };

/** claimNext's one row: the leased event's columns (null when none), and what to do otherwise. */
type ClaimRow = { [K in keyof RawEventRow]: RawEventRow[K] | null } & {
  prior_status: EventStatus | null;
  queue_found: boolean;
  capped_id: string | null;
  capped_schedule_id: string | null;
};

export interface ClaimNextInput {
  projectId: string;
  queueId: string;
  leaseSeconds: number | null;
  tokenHash: string;
  now: Date;
  /** Schedules whose cap was met this claim: their events are passed over. */
  skipSchedules: readonly string[];
}

export interface LeaseInput {
  eventId: string;
  projectId: string;
  tokenHash: string;
  now: Date;
}

export class EventStore extends EventReadStore {
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
          for key share of q
          on conflict (queue_id, deduplication_key) where deduplication_key is not null do nothing
          returning *`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /**
   * Puts dead events of the queue back to `available` with a fresh set of attempts: the ones named
   * (`eventIds`), or the oldest `limit` dead ones. Conditional on `status = 'dead'`, so of two
   * concurrent redrives each event moves back exactly once. `last_error` stays (why it died);
   * the age limit is lifted, since redriving is the operator asking for delivery.
   */
  async redrive(input: { projectId: string; queueId: string; eventIds: readonly string[] | null; limit: number; now: Date }): Promise<string[]> {
    const now = this.at(input.now);
    const named = input.eventIds
      ? sql`and id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(input.eventIds)}::jsonb))`
      : sql``;
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with picked as (
            select id from events where queue_id = ${input.queueId} and project_id = ${input.projectId} and status = 'dead' ${named}
            order by id limit ${input.limit} for update skip locked
          ), moved as (
          update events e set status = 'available', attempts = 0, available_at = ${now}, expires_at = null,
                 lease_token_hash = null, lease_expires_at = null, finished_at = null, updated_at = ${now}
          from picked where e.id = picked.id and e.status = 'dead'
          returning e.id, e.queue_id, 'dead'::text as status
          ), tallied as (${tally(sql`moved`, -1)})
          select id from moved`,
    );
    return rows.map((row) => row.id).sort();
  }

  /**
   * One statement, whatever the outcome: lock the oldest claimable event of the project's queue (SKIP
   * LOCKED) and lease it, reading the queue's default lease in the same join. A lease that ran out and
   * is taken over here is counted in the queue's `lease_expiries` by the same statement. An event of a
   * schedule with a concurrency cap is not leased here: when nothing was leased, the statement reports
   * the oldest such event (`capped`), for the caller to lease under the schedule's row lock. When
   * nothing was leased it also says whether the queue is the project's (`none` with `queueFound`), so
   * an empty claim needs no second query to tell "no work" from "no such queue".
   */
  async claimNext(input: ClaimNextInput): Promise<ClaimAttempt> {
    const claim = this.#claim(input, sql``);
    const [row] = await rowsOf<ClaimRow>(this.db, sql`with ${claim.ctes} select ${claim.columns}`);
    return claimAttemptOf(row!);
  }

  /**
   * ack, then claimNext on `next` in the same statement (one round trip for a consumer's ack-and-claim), the claim
   * made only if the ack was: null `acked` when the lease was not held (nothing claimed). The claim cannot take the
   * event just acked: in the statement's snapshot it is still leased.
   */
  async ackThenClaim(ack: LeaseInput, next: ClaimNextInput): Promise<{ acked: EventRow | null; claim: ClaimAttempt }> {
    const now = this.at(ack.now);
    const claim = this.#claim(next, sql`and exists (select 1 from done)`);
    const rows = await rowsOf<ClaimRow & { part: 'ack' | 'claim' }>(
      this.db,
      sql`with done as (${this.#ackUpdate(ack, now)}), tallied as (${tally(sql`done`)}), ${claim.ctes}
          select 'ack' as part, done.*, null::text as prior_status, null::boolean as queue_found, null::uuid as capped_id, null::uuid as capped_schedule_id from done
          union all
          (select 'claim' as part, ${claim.columns})`,
    );
    const acked = rows.find((r) => r.part === 'ack');
    return { acked: acked ? toEventRow(acked as RawEventRow) : null, claim: claimAttemptOf(rows.find((r) => r.part === 'claim')!) };
  }

  /**
   * claimNext's CTEs and what its one row selects; `when` is a condition the claim needs besides a claimable event
   * (ackThenClaim's: the ack happened).
   */
  #claim(input: ClaimNextInput, when: SQL): { ctes: SQL; columns: SQL } {
    const now = this.at(input.now);
    const skip = input.skipSchedules.length
      ? sql`and (e.schedule_id is null or not (e.schedule_id = any(${`{${input.skipSchedules.join(',')}}`}::uuid[])))`
      : sql``;
    const oldest = (filter: SQL) => sql`select e.id, e.schedule_id, e.status from events e
      where e.queue_id = ${input.queueId} and e.project_id = ${input.projectId} and ${CLAIMABLE(now)} ${skip} ${filter} ${when}
      order by e.available_at, e.id limit 1`;
    const capped = sql`exists (select 1 from event_schedules s where s.id = e.schedule_id and s.max_concurrency is not null)`;
    const leaseEnd = sql`${now} + make_interval(secs => coalesce(${input.leaseSeconds}::int, q.default_lease_seconds))`;
    // `not exists (select 1 from claimed)` is evaluated once (an init plan): the capped look runs
    // only when nothing was leased, and the takeover count only when a lapsed lease was taken.
    const ctes = sql`q as (
            select id, default_lease_seconds from event_queues where id = ${input.queueId} and project_id = ${input.projectId}
          ), head as (
            ${oldest(sql``)} for update skip locked
          ), claimed as (
            update events e set status = 'leased', attempts = e.attempts + 1, lease_token_hash = ${input.tokenHash},
                   lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
            from head, q, ${this.commitMode}
            where e.id = head.id and (e.schedule_id is null or not ${capped})
            returning e.*, head.status as prior_status
          ), taken_over as (
            update event_queues set lease_expiries = lease_expiries + 1
            where id = ${input.queueId} and exists (select 1 from claimed where prior_status = 'leased')
          )`;
    const columns = sql`c.*, exists (select 1 from q) as queue_found, held.id as capped_id, held.schedule_id as capped_schedule_id
          from (select 1) as one
          left join claimed as c on true
          left join lateral (
            ${oldest(sql`and e.schedule_id is not null and ${capped} and not exists (select 1 from claimed)`)}
          ) as held on true`;
    return { ctes, columns };
  }

  /** Leases one specific event if it is still claimable (the capped-schedule path, inside its lock). */
  async claimById(input: { eventId: string; leaseSeconds: number | null; tokenHash: string; now: Date }): Promise<{ row: EventRow; tookOver: boolean } | null> {
    const now = this.at(input.now);
    const leaseEnd = LEASE_END(now, input.leaseSeconds, sql`e.queue_id`);
    const rows = await rowsOf<RawEventRow & { prior_status: EventStatus }>(
      this.db,
      sql`update events e set status = 'leased', attempts = e.attempts + 1, lease_token_hash = ${input.tokenHash},
                 lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
          from (select id, status from events where id = ${input.eventId} for update) as prior, ${this.commitMode}
          where e.id = prior.id and ${CLAIMABLE(now)}
          returning e.*, prior.status as prior_status`,
    );
    return rows[0] ? { row: toEventRow(rows[0]), tookOver: rows[0].prior_status === 'leased' } : null;
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
    const rows = await rowsOf<RawEventRow>(this.db, sql`with done as (${this.#ackUpdate(input, now)}), tallied as (${tally(sql`done`)}) select * from done`);
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /** The ack's UPDATE (a CTE `done` of ack and ackThenClaim, with the counts' CTE over it). */
  #ackUpdate(input: LeaseInput, now: SQL): SQL {
    return sql`update events e set status = 'acked', lease_expires_at = null, finished_at = ${now}, updated_at = ${now}
            from ${this.commitMode}
            where e.id = ${input.eventId} and e.project_id = ${input.projectId} and ${LEASE_HELD(input.tokenHash, now)}
            returning e.*`;
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
      sql`with done as (
            update events e set
                   status = case when ${exhausted} then 'dead' else 'available' end,
                   available_at = case when ${exhausted} then e.available_at
                                       else ${now} + make_interval(secs => ${delay}) end,
                   finished_at = case when ${exhausted} then ${now} end,
                   last_error = ${input.error}, lease_expires_at = null, updated_at = ${now}
            from ${this.commitMode}
            where e.id = ${input.eventId} and e.project_id = ${input.projectId} and ${LEASE_HELD(input.tokenHash, now)}
            returning e.*
          ), tallied as (${tally(sql`done`)})
          select * from done`,
    );
    return rows[0] ? toEventRow(rows[0]) : null;
  }

  /**
   * Ends leases that ran out: `dead` when that was the last attempt, `expired` past the event's age
   * limit, else `available` again (claims already treat them so; this makes reads say it).
   */
  async sweepExpiredLeases(at: Date, limit: number): Promise<number> {
    const now = this.at(at);
    const rows = await rowsOf<{ swept: number }>(
      this.db,
      sql`with due as (
            select id from events where status = 'leased' and available_at <= ${now}
            order by available_at limit ${limit} for update skip locked
          ), swept as (
          update events e set
                 status = case when e.attempts >= e.max_attempts then 'dead'
                               when e.expires_at is not null and e.expires_at <= ${now} then 'expired'
                               else 'available' end,
                 finished_at = case when e.attempts >= e.max_attempts or (e.expires_at is not null and e.expires_at <= ${now})
                                    then ${now} end,
                 last_error = 'lease_expired: no ack or nack before ' || to_char(e.lease_expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 updated_at = ${now}
          from due, ${this.commitMode} where e.id = due.id
          returning e.queue_id, e.status
          ), counted as (
            select queue_id, count(*)::int as swept from swept group by queue_id
          ), recorded as (
            update event_queues q set lease_expiries = q.lease_expiries + counted.swept from counted where q.id = counted.queue_id
          ), tallied as (${tally(sql`swept`)})
          select swept from counted`,
    );
    return rows.reduce((sum, row) => sum + Number(row.swept), 0);
  }

  /** Counts leases that ran out and were taken over by a claim before the sweeper saw them. */
  async recordLeaseExpiries(queueId: string, count: number): Promise<void> {
    if (count > 0) await rowsOf(this.db, sql`update event_queues set lease_expiries = lease_expiries + ${count}::int where id = ${queueId}`);
  }

  /** Marks waiting events past their age limit (`expires_at`) as `expired`; they are never delivered. */
  async sweepAgedEvents(at: Date, limit: number): Promise<number> {
    const now = this.at(at);
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`with due as (
            select id from events where status = 'available' and expires_at is not null and expires_at <= ${now}
            order by expires_at limit ${limit} for update skip locked
          ), aged as (
          update events e set status = 'expired', finished_at = ${now},
                 last_error = 'max_event_age_exceeded: not delivered before ' || to_char(e.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 updated_at = ${now}
          from due, ${this.commitMode} where e.id = due.id
          returning e.id, e.queue_id, e.status
          ), tallied as (${tally(sql`aged`)})
          select id from aged`,
    );
    return rows.length;
  }
}

/** The caller holds the event's current lease: leased, same token, not yet expired. */
const LEASE_HELD = (tokenHash: string, now: SQL) =>
  sql`e.status = 'leased' and e.lease_token_hash = ${tokenHash} and e.lease_expires_at > ${now}`;

function claimAttemptOf(row: ClaimRow): ClaimAttempt {
  if (row.id) return { kind: 'claimed', row: toEventRow(row as RawEventRow), tookOver: row.prior_status === 'leased' };
  if (row.capped_id) return { kind: 'capped', eventId: row.capped_id, scheduleId: row.capped_schedule_id! };
  return { kind: 'none', queueFound: row.queue_found };
}
