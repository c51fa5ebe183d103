import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import { CronDefinitionError, parseCron } from './cron.js';
import { invalidSchedule, queueNotFound, scheduleNotFound } from './errors.js';
import { assertPayloadSize } from './event-service.js';
import { QueueStore } from './queue-store.js';
import { isForeignKeyViolation } from '../../platform/db-errors.js';
import { ScheduleStore, type BackfillPolicy, type OverlapPolicy, type ScheduleRow, type UpsertOutcome } from './schedule-store.js';

export interface ScheduleInput {
  queueId: string;
  externalId: string;
  name: string;
  schedule: { type: 'cron'; expression: string; timezone: string };
  payload: Record<string, unknown>;
  overlapPolicy: OverlapPolicy;
  maxConcurrency?: number | null;
  maxEventAgeSeconds?: number | null;
  backfill?: BackfillPolicy;
}

/**
 * Schedule definitions. POST is idempotent on (project, externalId): the first creates revision 1,
 * a changed definition becomes the next revision, an identical one changes nothing. Every accepted
 * revision is `pending` until the scheduler registers it (see scheduler.ts).
 */
export class ScheduleService {
  private readonly store: ScheduleStore;
  private readonly queues: QueueStore;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.store = new ScheduleStore(db);
    this.queues = new QueueStore(db);
  }

  async upsert(projectId: string, input: ScheduleInput): Promise<{ schedule: ScheduleRow; outcome: UpsertOutcome }> {
    const expression = input.schedule.expression.trim().split(/\s+/).join(' ');
    try {
      parseCron(expression, input.schedule.timezone);
    } catch (error) {
      if (error instanceof CronDefinitionError) throw invalidSchedule(error.field, error.message);
      throw error;
    }
    assertPayloadSize(input.payload);
    if (!UUID_PATTERN.test(input.queueId) || !(await this.queues.get(projectId, input.queueId))) throw queueNotFound();
    const now = this.clock.now();
    try {
      const { row, outcome } = await this.store.upsert({
        id: newId(now.getTime()),
        projectId,
        externalId: input.externalId,
        now,
        definition: {
          queueId: input.queueId,
          name: input.name,
          cronExpression: expression,
          timezone: input.schedule.timezone,
          payload: input.payload,
          overlapPolicy: input.overlapPolicy,
          maxConcurrency: input.maxConcurrency ?? null,
          maxEventAgeSeconds: input.maxEventAgeSeconds ?? null,
          backfill: input.backfill ?? 'latest',
        },
      });
      return { schedule: row, outcome };
    } catch (error) {
      // The queue was deleted between the check and the write.
      if (isForeignKeyViolation(error)) throw queueNotFound();
      throw error;
    }
  }

  async get(projectId: string, scheduleId: string): Promise<ScheduleRow> {
    const row = UUID_PATTERN.test(scheduleId) ? await this.store.get(projectId, scheduleId) : null;
    if (!row) throw scheduleNotFound();
    return row;
  }

  list(projectId: string, queueId: string | null): Promise<ScheduleRow[]> {
    if (queueId !== null && !UUID_PATTERN.test(queueId)) return Promise.resolve([]);
    return this.store.list(projectId, queueId);
  }

  /** Stops ticks until resumed; events already enqueued stay. Pausing a paused schedule changes nothing. */
  async pause(projectId: string, scheduleId: string): Promise<ScheduleRow> {
    const row = UUID_PATTERN.test(scheduleId) ? await this.store.pause(projectId, scheduleId, this.clock.now()) : null;
    if (!row) throw scheduleNotFound();
    return row;
  }

  /** Fires again from the first tick after now (ticks of the pause are not backfilled). Idempotent. */
  async resume(projectId: string, scheduleId: string): Promise<ScheduleRow> {
    const row = UUID_PATTERN.test(scheduleId) ? await this.store.resume(projectId, scheduleId, this.clock.now()) : null;
    if (!row) throw scheduleNotFound();
    return row;
  }

  /** Stops future ticks. Events the schedule already enqueued stay and are delivered. */
  async delete(projectId: string, scheduleId: string): Promise<void> {
    const deleted = UUID_PATTERN.test(scheduleId) && (await this.store.delete(projectId, scheduleId));
    if (!deleted) throw scheduleNotFound();
  }
}
