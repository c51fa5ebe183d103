import type { AppContext } from '../../../context.js';
import { ApiError } from '../../../platform/http/errors.js';
import { CronDefinitionError, parseCron } from '../../events/cron.js';
import type { EventsServices } from '../../events/services.js';
import type { QueueRow } from '../../events/queue-store.js';
import { tradingErrors } from '../errors.js';
import type { RuntimeRow } from './runtime-store.js';

/** The events project that holds trading's own queue and schedules; no API key ever names it. */
export const TRADING_PROJECT = 'system:agentic-trading';
const QUEUE_NAME = 'executions';
/** A tick's event: redelivered after this lease if its worker dies, given up after MAX_ATTEMPTS. */
export const TICK_LEASE_SECONDS = 60;
const MAX_ATTEMPTS = 3;

/** A runtime's (or a backtest's) cron, evaluated in UTC; a bad expression is 400 invalid_cron_expression. */
export function utcCron(expression: string) {
  try {
    return parseCron(expression, 'UTC');
  } catch (error) {
    if (error instanceof CronDefinitionError) throw tradingErrors.invalidCron(error.message);
    throw error;
  }
}

/**
 * Runtimes' cron ticks through the Events schedules: one schedule per runtime on trading's queue, whose
 * events carry the runtime id. The events scheduler fires each tick once (its unique tick index), and
 * the schedule follows the runtime's status: running while active, paused while paused or in review,
 * deleted once the runtime has ended.
 */
export class RuntimeSchedules {
  private queue: QueueRow | null = null;

  constructor(private readonly ctx: AppContext) {}

  private get events(): EventsServices {
    return this.ctx.services.events;
  }

  /** Trading's queue, created by whichever node needs it first. */
  async queueId(): Promise<string> {
    if (this.queue) return this.queue.id;
    const find = async () => (await this.events.queues.list(TRADING_PROJECT)).find((q) => q.name === QUEUE_NAME) ?? null;
    this.queue = await find();
    if (!this.queue) {
      try {
        this.queue = await this.events.queues.create(TRADING_PROJECT, { name: QUEUE_NAME, defaultLeaseSeconds: TICK_LEASE_SECONDS, maxAttempts: MAX_ATTEMPTS });
      } catch (error) {
        this.queue = await find(); // another node created it first
        if (!this.queue) throw error;
      }
    }
    return this.queue.id;
  }

  /**
   * The runtime's schedule, made once (idempotent on the runtime id). Late ticks are dropped, not
   * replayed (backfill none): a trade decided on stale candles is not what the user asked for.
   */
  async ensure(runtime: RuntimeRow) {
    const { schedule } = await this.events.schedules.upsert(TRADING_PROJECT, {
      queueId: await this.queueId(),
      externalId: `runtime:${runtime.id}`,
      name: runtime.name,
      schedule: { type: 'cron', expression: runtime.cronExpression, timezone: 'UTC' },
      payload: { runtimeId: runtime.id },
      overlapPolicy: 'all',
      backfill: 'none',
    });
    return schedule;
  }

  async pause(scheduleId: string): Promise<void> {
    await this.events.schedules.pause(TRADING_PROJECT, scheduleId);
  }

  async resume(scheduleId: string): Promise<void> {
    await this.events.schedules.resume(TRADING_PROJECT, scheduleId);
  }

  /** Deletes it; one that is already gone is fine. */
  async remove(scheduleId: string): Promise<void> {
    await this.events.schedules.delete(TRADING_PROJECT, scheduleId).catch((error: unknown) => {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    });
  }
}
