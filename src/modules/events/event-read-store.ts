import { sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf } from '../../platform/sql-rows.js';
import { COUNTS_OF } from './counts.js';
import { toEventRow, type RawEventRow, type EventRow } from './event-rows.js';

// The statements of events that only read: one event or a few, a page of dead ones, a queue's depth
// (stats) and every queue's totals (/metrics). It is the base of EventStore (event-store.ts), which adds
// every statement that changes an event and the concurrency argument they share; kept apart because
// a read moves nothing, so none of that argument applies here. The options and the statement's "now"
// live here, the base both halves build on.

export interface QueueStatsRow {
  ready: number;
  delayed: number;
  leased: number;
  acked: number;
  dead: number;
  expired: number;
  superseded: number;
  oldestReadyAgeSeconds: number | null;
  leaseExpiries: number;
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

export class EventReadStore {
  /** A FROM item of every lease statement: switches its implicit transaction to an async commit. */
  protected readonly commitMode: SQL;

  constructor(
    protected readonly db: Executor,
    private readonly options: EventStoreOptions = { asyncLeaseCommits: false, databaseTime: true },
  ) {
    this.commitMode = sql.raw(
      options.asyncLeaseCommits ? `(select set_config('synchronous_commit', 'off', true)) as commit_mode` : `(select 1) as commit_mode`,
    );
  }

  /** The statement's "now": see EventStoreOptions.databaseTime. */
  protected at(now: Date): SQL {
    return this.options.databaseTime ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
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

  /** The project's events among `ids` (any order; missing ones are simply absent). */
  async getMany(projectId: string, ids: readonly string[]): Promise<EventRow[]> {
    if (ids.length === 0) return [];
    const rows = await rowsOf<RawEventRow>(
      this.db,
      sql`select * from events where id in (select value::uuid from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
            and project_id = ${projectId}`,
    );
    return rows.map(toEventRow);
  }

  /**
   * Depth by state as readers see it (a lease that ran out counts as what the sweeper will make of
   * it, as in records.effectiveStatus), the age of the oldest ready event, and the queue's count of
   * leases that ran out. Only open events are counted, over the claim index (its partial predicate:
   * `available`/`leased`); finished ones come from the queue's terminal counts. The cost follows the
   * queue's backlog, never its history.
   */
  async stats(projectId: string, queueId: string, at: Date): Promise<QueueStatsRow | null> {
    const now = this.at(at);
    const rows = await rowsOf<Omit<QueueStatsRow, 'leaseExpiries'> & { leaseExpiries: string }>(
      this.db,
      sql`select q.lease_expiries::text as "leaseExpiries", o.ready, o.delayed, o.leased, f.acked,
                 f.dead + o.lapsed_dead as dead, f.expired + o.lapsed_expired as expired, f.superseded,
                 o."oldestReadyAgeSeconds"
          from event_queues q, lateral ${OPEN_DEPTH(now)} as o, lateral ${COUNTS_OF(sql`q.id`)} as f
          where q.id = ${queueId} and q.project_id = ${projectId}`,
    );
    // The counter is a bigint: drivers return it as text.
    return rows[0] ? { ...rows[0], leaseExpiries: Number(rows[0].leaseExpiries) } : null;
  }

  /** Open events of all queues by state, dead ones (their counts), and all queues' lease expiries (for /metrics). */
  async openTotals(at: Date): Promise<{ ready: number; delayed: number; leased: number; dead: number; leaseExpiries: number }> {
    const now = this.at(at);
    const [row] = await rowsOf<{ ready: number; delayed: number; leased: number; dead: number; leaseExpiries: string }>(
      this.db,
      sql`select (select count(*) from events where status = 'available' and available_at <= ${now})::int as ready,
                 (select count(*) from events where status = 'available' and available_at > ${now})::int as delayed,
                 (select count(*) from events where status = 'leased')::int as leased,
                 (select coalesce(sum(dead), 0) from event_queue_counts)::int as dead,
                 (select coalesce(sum(lease_expiries), 0) from event_queues)::text as "leaseExpiries"`,
    );
    return { ready: row.ready, delayed: row.delayed, leased: row.leased, dead: row.dead, leaseExpiries: Number(row.leaseExpiries) };
  }
}

/**
 * A queue's open events (alias `q` for the queue) by the state a reader sees now: ready, delayed,
 * leased, and lapsed leases that already count as dead or expired. `status in ('available',
 * 'leased')` matches the claim index's predicate, so the planner counts over that index alone.
 */
const OPEN_DEPTH = (now: SQL) => sql`(
  select count(*) filter (where st = 'available' and e.available_at <= ${now})::int as ready,
         count(*) filter (where st = 'available' and e.available_at > ${now})::int as delayed,
         count(*) filter (where st = 'leased')::int as leased,
         count(*) filter (where st = 'dead')::int as lapsed_dead,
         count(*) filter (where st = 'expired')::int as lapsed_expired,
         extract(epoch from ${now} - min(e.available_at) filter (where st = 'available' and e.available_at <= ${now}))::float8
           as "oldestReadyAgeSeconds"
  from events e, lateral (select case when e.status = 'leased' and e.lease_expires_at <= ${now} then
                                   case when e.attempts >= e.max_attempts then 'dead'
                                        when e.expires_at is not null and e.expires_at <= ${now} then 'expired'
                                        else 'available' end
                                 else e.status end as st) as effective
  where e.queue_id = q.id and e.status in ('available', 'leased'))`;
