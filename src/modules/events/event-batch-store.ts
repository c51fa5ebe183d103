import { sql, type SQL } from 'drizzle-orm';
import { jsonText } from '../../platform/db-types.js';
import { toEventRow, type EventRow, type RawEventRow } from './event-rows.js';
import { CLAIMABLE, EventStore } from './event-store.js';
import { rowsOf } from '../../platform/sql-rows.js';
import { tally } from './counts.js';

// The batch statements of events: one statement per request, whatever its size. Each keeps the
// single-event statement's concurrency argument (event-store.ts): a claim locks with SKIP LOCKED and
// every lease change is conditional on the caller's token, so a batch is N single operations that
// happen to share a round trip. Items travel as one parameter whatever their number (a JSON
// recordset to insert, array literals to find events by primary key): the same statement text for
// any batch size, so it is planned once per connection.

export interface BatchPublishItem {
  id: string;
  payload: Record<string, unknown>;
  deduplicationKey: string | null;
  delaySeconds: number;
}

export interface LeaseItem {
  eventId: string;
  tokenHash: string;
}

export interface NackItem extends LeaseItem {
  error: string;
  retryDelaySeconds: number | null;
}

export interface ClaimManyInput {
  projectId: string;
  queueId: string;
  leaseSeconds: number | null;
  /** At most this many events. */
  limit: number;
  /** The hash of the one lease token every event of this claim is leased with. */
  tokenHash: string;
  now: Date;
}

export interface ClaimedRow {
  row: EventRow;
  /** Its place in claim order (0-based). */
  slot: number;
}

export class EventBatchStore extends EventStore {
  /**
   * Inserts the events into the project's queue (durable commit) and returns the ids inserted.
   * Items whose deduplication key exists (or repeats inside the batch) are left out; so are all of
   * them when the queue is not the project's.
   */
  async insertMany(input: { projectId: string; queueId: string; items: readonly BatchPublishItem[]; now: Date }): Promise<Set<string>> {
    const now = this.at(input.now);
    const items = input.items.map((item) => ({ id: item.id, payload: item.payload, key: item.deduplicationKey, delay: item.delaySeconds }));
    const rows = await rowsOf<{ id: string }>(
      this.db,
      sql`insert into events (id, project_id, queue_id, payload, deduplication_key, status, attempts,
                              max_attempts, available_at, created_at, updated_at)
          select x.id, q.project_id, q.id, x.payload, x.key, 'available', 0, q.max_attempts,
                 ${now} + make_interval(secs => x.delay), ${now}, ${now}
          from event_queues q, jsonb_to_recordset(${jsonText(items)}::jsonb) as x(id uuid, payload jsonb, key text, delay int)
          where q.id = ${input.queueId} and q.project_id = ${input.projectId}
          -- Events have no foreign key to their queue (tables.ts): this lock is what keeps a queue's delete from
          -- missing them. A queue deleted meanwhile is waited for and then skipped (nothing inserted), no error
          -- that would roll back the caller's transaction (a settled intent's, for one).
          for key share of q
          on conflict (queue_id, deduplication_key) where deduplication_key is not null do nothing
          returning id`,
    );
    return new Set(rows.map((row) => row.id));
  }

  /** The ids of the queue's events holding any of these deduplication keys, by key. */
  async idsByDeduplicationKeys(projectId: string, queueId: string, keys: readonly string[]): Promise<Map<string, string>> {
    if (keys.length === 0) return new Map();
    const rows = await rowsOf<{ id: string; deduplication_key: string }>(
      this.db,
      sql`select id, deduplication_key from events where queue_id = ${queueId}
            and deduplication_key in (select value from jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb))
            and project_id = ${projectId}`,
    );
    return new Map(rows.map((row) => [row.deduplication_key, row.id]));
  }

  /**
   * Leases up to `limit` of the oldest claimable events, all with one lease token, in one
   * statement. Events of schedules with a concurrency cap are left to the single-event path, which
   * counts running leases under the schedule's lock. Leases taken over are counted by the statement.
   */
  async claimMany(input: ClaimManyInput): Promise<ClaimedRow[]> {
    const [row] = await rowsOf<{ claimed: RawClaimedRow[] }>(this.db, sql`with ${this.claimCtes(input, sql``)} select ${CLAIMED_JSON} as claimed`);
    return claimedRows(row.claimed);
  }

  /** Acks every item whose lease the caller still holds; returns the ids acked. */
  async ackMany(input: { projectId: string; items: readonly LeaseItem[]; now: Date }): Promise<Set<string>> {
    const { ids, leases } = leaseArrays(input.items);
    const rows = await rowsOf<{ id: string }>(this.db, sql`with ${this.ackCtes(input.projectId, ids, leases, this.at(input.now))} select id from done`);
    return new Set(rows.map((row) => row.id));
  }

  /**
   * ackMany then claimMany as one statement, so one commit (one WAL flush) instead of two. All CTEs
   * see the snapshot from before the acks: the events acked here must not be claimed again, so the
   * claim leaves out every id named in the acks (a held lease is not claimable anyway, its
   * `available_at` being its expiry; a lapsed one named here is refused, and left out so that its
   * answer says "expired", as the two statements said, and no row is changed twice by one statement).
   */
  async ackAndClaimMany(input: ClaimManyInput & { items: readonly LeaseItem[] }): Promise<{ acked: Set<string>; claimed: ClaimedRow[] }> {
    const { ids, leases } = leaseArrays(input.items);
    const [row] = await rowsOf<{ acked: string[]; claimed: RawClaimedRow[] }>(
      this.db,
      sql`with ${this.ackCtes(input.projectId, ids, leases, this.at(input.now))},
               ${this.claimCtes(input, sql`and not (e.id = any(${ids}::uuid[]))`)}
          select (select coalesce(json_agg(id), '[]'::json) from done) as acked, ${CLAIMED_JSON} as claimed`,
    );
    return { acked: new Set(row.acked), claimed: claimedRows(row.claimed) };
  }

  /** CTEs `done` (the acks) and `tallied` (their terminal counts). */
  private ackCtes(projectId: string, ids: string, leases: string, now: SQL): SQL {
    return sql`done as (
            update events e set status = 'acked', lease_expires_at = null, finished_at = ${now}, updated_at = ${now}
            from ${this.commitMode}
            where e.id = any(${ids}::uuid[]) and e.project_id = ${projectId} and ${HELD_BY_ONE_OF(leases, now)}
            returning e.id, e.queue_id, e.status
          ), tallied as (${tally(sql`done`)})`;
  }

  /** CTEs `claimed` (the leased rows, with slot and took_over) and what it needs; `exclude` filters the candidates. */
  private claimCtes(input: ClaimManyInput, exclude: SQL): SQL {
    const now = this.at(input.now);
    // The queue's default lease is read once (a join), not once per row as LEASE_END would.
    const leaseEnd = sql`${now} + make_interval(secs => coalesce(${input.leaseSeconds}::int, q.default_lease_seconds))`;
    const uncapped = sql`(e.schedule_id is null or not exists (
      select 1 from event_schedules s where s.id = e.schedule_id and s.max_concurrency is not null))`;
    // Lock first (SKIP LOCKED), then update the locked rows found by primary key (`= any(ids)`: a join
    // on them let the planner hash-join the whole table). `slot` is each row's place in claim order.
    return sql`locked as (
            select e.id, e.status, e.available_at from events e
            where e.queue_id = ${input.queueId} and e.project_id = ${input.projectId} and ${CLAIMABLE(now)} and ${uncapped} ${exclude}
            order by e.available_at, e.id limit ${input.limit}
            for update skip locked
          ), head as (
            select array(select id from locked order by available_at, id) as ids,
                   array(select id from locked where status = 'leased') as taken
          ), claimed as (
            update events e set status = 'leased', attempts = e.attempts + 1,
                   lease_token_hash = ${input.tokenHash},
                   lease_expires_at = ${leaseEnd}, available_at = ${leaseEnd}, updated_at = ${now}
            from head, event_queues q, ${this.commitMode}
            where e.id = any(head.ids) and q.id = ${input.queueId}
            returning e.*, array_position(head.ids, e.id) as slot, e.id = any(head.taken) as took_over
          ), taken_over as (
            update event_queues set lease_expiries = lease_expiries + (select count(*) from claimed where took_over)::int
            where id = ${input.queueId} and exists (select 1 from claimed where took_over)
          )`;
  }

  /**
   * Nacks every item whose lease the caller still holds, each with its own error and delay (null:
   * the default backoff); `dead` after the last attempt. Returns the changed rows.
   */
  async nackMany(input: { projectId: string; items: readonly NackItem[]; backoff: { base: number; cap: number }; now: Date }): Promise<EventRow[]> {
    const now = this.at(input.now);
    const { ids, leases, firsts } = leaseArrays(input.items);
    const slot = sql`array_position(${ids}::uuid[], e.id)`;
    const errors = jsonText(firsts.map((item) => item.error));
    const delays = jsonText(firsts.map((item) => item.retryDelaySeconds));
    const delay = sql`coalesce((${delays}::jsonb ->> (${slot} - 1))::int, least(power(${input.backoff.base}::int, e.attempts), ${input.backoff.cap}::int))`;
    const exhausted = sql`e.attempts >= e.max_attempts`;
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`with done as (
            update events e set
                   status = case when ${exhausted} then 'dead' else 'available' end,
                   available_at = case when ${exhausted} then e.available_at else ${now} + make_interval(secs => ${delay}) end,
                   finished_at = case when ${exhausted} then ${now} end,
                   last_error = ${errors}::jsonb ->> (${slot} - 1), lease_expires_at = null, updated_at = ${now}
            from ${this.commitMode}
            where e.id = any(${ids}::uuid[]) and e.project_id = ${input.projectId} and ${HELD_BY_ONE_OF(leases, now)}
            returning e.*
          ), tallied as (${tally(sql`done`)})
          select * from done`,
    );
    return rows.map(toEventRow);
  }
}

type RawClaimedRow = RawEventRow & { slot: number };

/**
 * The claimed rows as one JSON array: one value for the driver to read instead of 20 per row (node-postgres
 * spent about 1 ms reading 100 rows field by field). Timestamps come as JSON text, which toDate reads.
 */
const CLAIMED_JSON = sql`(select coalesce(json_agg(c), '[]'::json) from claimed as c)`;

/** Claimed rows in claim order (`slot`, 1-based in SQL). */
const claimedRows = (rows: readonly RawClaimedRow[]): ClaimedRow[] =>
  rows.map((raw) => ({ row: toEventRow(raw), slot: Number(raw.slot) - 1 })).sort((a, b) => a.slot - b.slot);

/**
 * The event holds one of these leases ("<id> <token hash>" pairs): an exact pairing, checked as
 * one array membership. Events are found by `e.id = any(ids)` (primary key) and nothing else: a join
 * against a recordset of the items let the planner scan every leased event instead, and so did a bare
 * `e.status = 'leased'`, which implies the predicates of the partial indexes on open and leased events
 * (without fresh statistics the planner read every lease in the system through one, checking each
 * against the batch's ids). Inside the compared expression, the status test offers no index.
 */
const HELD_BY_ONE_OF = (leases: string, now: SQL) =>
  sql`(case when e.status = 'leased' then e.id::text || ' ' || e.lease_token_hash end) = any(${leases}::text[]) and e.lease_expires_at > ${now}`;

/** Array literals of the items (ids are UUIDs, hashes hex: nothing to quote). An id named twice keeps its first item. */
function leaseArrays<T extends LeaseItem>(items: readonly T[]): { ids: string; leases: string; firsts: T[] } {
  const seen = new Set<string>();
  const firsts = items.filter((item) => !seen.has(item.eventId) && seen.add(item.eventId));
  return {
    ids: `{${firsts.map((item) => item.eventId).join(',')}}`,
    leases: `{${firsts.map((item) => `"${item.eventId} ${item.tokenHash}"`).join(',')}}`,
    firsts,
  };
}
