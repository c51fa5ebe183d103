import { sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { rowsOf } from '../../platform/sql-rows.js';

export interface QueueDepthRow {
  queueId: string;
  ready: number;
  delayed: number;
  leased: number;
  /** How long the oldest ready event has waited to be claimed (seconds since it became available); 0 with none ready. */
  oldestReadySeconds: number;
}

/** Operators' view of the queues (/metrics): read-only, over every project's queues. */
export class QueueDepthStore {
  constructor(private readonly db: Executor) {}

  /**
   * The `limit` queues with the most open events, by state: one statement over the claim index's rows
   * (its predicate: `available`/`leased`), so its cost follows the backlog, never the history.
   */
  async deepest(limit: number): Promise<QueueDepthRow[]> {
    return rowsOf<QueueDepthRow>(
      this.db,
      sql`select queue_id as "queueId",
                 count(*) filter (where status = 'available' and available_at <= now())::int as ready,
                 count(*) filter (where status = 'available' and available_at > now())::int as delayed,
                 count(*) filter (where status = 'leased')::int as leased,
                 coalesce(extract(epoch from now() - min(available_at) filter (where status = 'available' and available_at <= now())), 0)::float8 as "oldestReadySeconds"
          from events where status in ('available', 'leased')
          group by queue_id order by count(*) desc, queue_id limit ${limit}`,
    );
  }
}
