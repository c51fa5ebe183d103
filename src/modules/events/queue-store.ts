import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import { eventQueueCounts, eventQueues } from './tables.js';

export type QueueRow = typeof eventQueues.$inferSelect;

export class DuplicateQueueNameError extends Error {}

/** SQL of event queues. Every read is scoped to a project: another project's queue does not exist. */
export class QueueStore {
  constructor(private readonly db: Executor) {}

  async insert(row: QueueRow): Promise<QueueRow> {
    try {
      await this.db.insert(eventQueues).values(row);
      return row;
    } catch (error) {
      if (isUniqueViolation(error, 'event_queues_project_name_unique')) throw new DuplicateQueueNameError();
      throw error;
    }
  }

  async findByName(projectId: string, name: string): Promise<QueueRow | null> {
    const [row] = await this.db
      .select()
      .from(eventQueues)
      .where(and(eq(eventQueues.projectId, projectId), eq(eventQueues.name, name)))
      .limit(1);
    return row ?? null;
  }

  async get(projectId: string, id: string): Promise<QueueRow | null> {
    const [row] = await this.db
      .select()
      .from(eventQueues)
      .where(and(eq(eventQueues.projectId, projectId), eq(eventQueues.id, id)))
      .limit(1);
    return row ?? null;
  }

  async list(projectId: string): Promise<QueueRow[]> {
    return this.db.select().from(eventQueues).where(eq(eventQueues.projectId, projectId)).orderBy(desc(eventQueues.id));
  }

  /** Changes what may change after creation (the retention); null when the project has no such queue. */
  async update(projectId: string, id: string, changes: { retentionSeconds: number; updatedAt: Date }): Promise<QueueRow | null> {
    const [row] = await this.db
      .update(eventQueues)
      .set(changes)
      .where(and(eq(eventQueues.projectId, projectId), eq(eventQueues.id, id)))
      .returning();
    return row ?? null;
  }

  /**
   * Deletes the queue (its schedules go with it: foreign key), then its events, then its terminal counts.
   * Separate statements on purpose, each reading what the one before waited for: the queue row's delete
   * waits for event inserts in flight (they hold it FOR KEY SHARE) and turns later ones away, so the next
   * snapshot holds every event the queue will have; the events' delete waits for acks in flight, so the
   * counts' statement sees the counter rows they wrote.
   */
  async delete(projectId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const rows = await tx
        .delete(eventQueues)
        .where(and(eq(eventQueues.projectId, projectId), eq(eventQueues.id, id)))
        .returning({ id: eventQueues.id });
      if (rows.length === 0) return false;
      await tx.execute(deleteEventsOf(id));
      await tx.delete(eventQueueCounts).where(eq(eventQueueCounts.queueId, id));
      return true;
    });
  }
}

/**
 * Every event of the queue, found through the claim index (open events) and the finished index: the
 * table's check makes each event one or the other, and the condition stays true of a row changed while
 * the statement waited for it.
 */
export const deleteEventsOf = (queueId: string): SQL =>
  sql`delete from events where queue_id = ${queueId} and (status in ('available', 'leased') or finished_at is not null)`;
