import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import { queueNameTaken, queueNotFound } from './errors.js';
import { LIMITS } from './limits.js';
import { DuplicateQueueNameError, QueueStore, type QueueRow } from './queue-store.js';

export interface CreateQueueInput {
  name: string;
  defaultLeaseSeconds: number;
  maxAttempts: number;
  /** Default: LIMITS.defaultRetentionSeconds (7 days). */
  retentionSeconds?: number;
}

/** Event queues of a project. Only the retention changes after creation; delete removes its events too. */
export class QueueService {
  private readonly store: QueueStore;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.store = new QueueStore(db);
  }

  async create(projectId: string, input: CreateQueueInput): Promise<QueueRow> {
    const now = this.clock.now();
    const row: QueueRow = {
      id: newId(now.getTime()),
      projectId,
      status: 'active',
      leaseExpiries: 0,
      createdAt: now,
      updatedAt: now,
      ...input,
      retentionSeconds: input.retentionSeconds ?? LIMITS.defaultRetentionSeconds,
    };
    try {
      return await this.store.insert(row);
    } catch (error) {
      if (!(error instanceof DuplicateQueueNameError)) throw error;
      const existing = await this.store.findByName(projectId, input.name);
      throw queueNameTaken(existing?.id ?? '');
    }
  }

  async get(projectId: string, queueId: string): Promise<QueueRow> {
    const row = UUID_PATTERN.test(queueId) ? await this.store.get(projectId, queueId) : null;
    if (!row) throw queueNotFound();
    return row;
  }

  /** Sets how long the queue keeps finished events; the next purge applies it to events already finished. */
  async setRetention(projectId: string, queueId: string, retentionSeconds: number): Promise<QueueRow> {
    const row = UUID_PATTERN.test(queueId) ? await this.store.update(projectId, queueId, { retentionSeconds, updatedAt: this.clock.now() }) : null;
    if (!row) throw queueNotFound();
    return row;
  }

  list(projectId: string): Promise<QueueRow[]> {
    return this.store.list(projectId);
  }

  async delete(projectId: string, queueId: string): Promise<void> {
    const deleted = UUID_PATTERN.test(queueId) && (await this.store.delete(projectId, queueId));
    if (!deleted) throw queueNotFound();
  }
}
