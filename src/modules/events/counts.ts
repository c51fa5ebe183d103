import { sql, type SQL } from 'drizzle-orm';

// SQL of event_queue_counts (tables.ts): how many events of each queue are in each terminal state.
// Stats read these sums instead of counting finished events, so their cost does not grow with a
// queue's history. The one rule: a statement that moves events into or out of a terminal state adds
// its delta in the same statement (a CTE below), so the counts commit or roll back with the change.

export const TERMINAL = sql.raw(`('acked', 'dead', 'expired', 'superseded')`);

/** Counter rows per queue: each backend writes slot `pid % SLOTS` (see tables.ts). */
const SLOTS = 256;

/**
 * A CTE body (`name as (...)` is the caller's) that adds `sign` × the rows of `changed` to the
 * counts, by queue and by their status (`changed` yields `queue_id` and `status`; non-terminal
 * statuses add nothing, and a statement that finished nothing writes no counter row).
 */
export function tally(changed: SQL, sign: 1 | -1 = 1): SQL {
  const delta = (status: string) => sql.raw(`${sign} * count(*) filter (where status = '${status}')`);
  return sql`insert into event_queue_counts as c (queue_id, slot, acked, dead, expired, superseded)
    select queue_id, pg_backend_pid() % ${sql.raw(String(SLOTS))}, ${delta('acked')}, ${delta('dead')}, ${delta('expired')}, ${delta('superseded')}
    from ${changed} group by queue_id
    having count(*) filter (where status in ${TERMINAL}) > 0
    on conflict (queue_id, slot) do update set acked = c.acked + excluded.acked, dead = c.dead + excluded.dead,
       expired = c.expired + excluded.expired, superseded = c.superseded + excluded.superseded`;
}

/** A queue's terminal counts (the sum of its slots), as a lateral FROM item of a statement over `queue`. */
export const COUNTS_OF = (queueId: SQL) => sql`(
  select coalesce(sum(acked), 0)::int as acked, coalesce(sum(dead), 0)::int as dead,
         coalesce(sum(expired), 0)::int as expired, coalesce(sum(superseded), 0)::int as superseded
  from event_queue_counts where queue_id = ${queueId})`;
