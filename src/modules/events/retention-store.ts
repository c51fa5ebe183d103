import { sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf } from '../../platform/sql-rows.js';
import { TERMINAL, tally } from './counts.js';

/**
 * SQL of the retention purge: deletes finished events (acked, dead, expired, superseded) older than
 * their queue's `retention_seconds`, oldest first, at most `limit` rows per statement. Each queue is
 * a range of the (queue_id, finished_at) index, so a statement reads only the rows it deletes (plus
 * one probe per queue with nothing due). Open events are never touched: finished_at is null while an
 * event is available or leased, and the delete re-checks status and age on the row it locks (a
 * redrive racing the purge wins: the row is no longer dead).
 */
export class RetentionStore {
  constructor(
    private readonly db: Executor,
    /** The database's now(), or a test clock's reading. */
    private readonly databaseTime: boolean,
  ) {}

  /** One batch; returns the number of events deleted. */
  async purgeFinished(at: Date, limit: number): Promise<number> {
    const now = this.databaseTime ? sql`now()` : sql`${at.toISOString()}::timestamptz`;
    const rows = await rowsOf<{ purged: number }>(
      this.db,
      sql`with due as (
            select d.id from event_queues q
            cross join lateral (
              select e.id from events e
              where e.queue_id = q.id and e.finished_at < ${now} - make_interval(secs => q.retention_seconds)
                and e.status in ${TERMINAL}
              order by e.finished_at limit ${limit}
            ) as d
            limit ${limit}
          ), gone as (
            -- A crash that undoes a purge loses nothing: the next pass deletes the rows again. So the
            -- purge does not wait for its WAL flush (this transaction only). Rows are found by primary
            -- key (= any(array)): a join on \`due\` could be planned as a hash join over the whole table.
            delete from events e using event_queues q, (select set_config('synchronous_commit', 'off', true)) as commit_mode
            where e.id = any(array(select id from due)) and q.id = e.queue_id
              and e.status in ${TERMINAL} and e.finished_at < ${now} - make_interval(secs => q.retention_seconds)
            returning e.queue_id, e.status
          ), tallied as (${tally(sql`gone`, -1)})
          select count(*)::int as purged from gone`,
    );
    return rows[0]?.purged ?? 0;
  }
}
