import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { newId } from '../../platform/ids.js';
import { latestTickUpTo, nextTick, parseCron } from './cron.js';
import { ScheduleStore, type ScheduleRow } from './schedule-store.js';

/** Schedules handled per pass; a full batch makes the loop run again at once. */
const BATCH = 100;

export interface SchedulerPass {
  synced: number;
  failed: number;
  fired: number;
  skipped: number;
  /** A batch was full: run again at once. */
  more: boolean;
}

/**
 * Registers schedule revisions and fires their ticks. Runs as a leader loop (one node), but every
 * step is safe to run twice: registration is conditional on the revision, and a tick is fired by a
 * conditional advance of `next_fire_at` in the transaction that inserts its event.
 *
 * Catch-up: when the scheduler finds ticks missed (downtime, or a pass that ran late), it enqueues
 * only the LATEST missed tick and moves on to the next tick after now; older missed ticks are dropped.
 * A missed tick older than the schedule's maxEventAgeSeconds is not enqueued at all.
 */
export class Scheduler {
  private readonly store: ScheduleStore;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly onFired: (queueId: string) => void,
  ) {
    this.store = new ScheduleStore(db);
  }

  /** One full pass at `now` (the clock's by default): register pending revisions, then fire due ticks. */
  async tick(now: Date = this.clock.now()): Promise<SchedulerPass> {
    const sync = await this.syncPending(now);
    const fire = await this.fireDue(now);
    return { synced: sync.synced, failed: sync.failed, fired: fire.fired, skipped: fire.skipped, more: sync.more || fire.more };
  }

  /** Moves `pending` revisions to `synced` (with their first tick after now) or to `error`. */
  async syncPending(now: Date = this.clock.now()): Promise<{ synced: number; failed: number; more: boolean }> {
    let synced = 0;
    let failed = 0;
    const pending = await this.store.pendingSync(BATCH);
    for (const schedule of pending) {
      let nextFireAt: Date | null = null;
      let problem: string | null = null;
      try {
        nextFireAt = nextTick(parseCron(schedule.cronExpression, schedule.timezone), now);
        if (!nextFireAt) problem = 'the cron expression has no future tick';
      } catch (error) {
        problem = error instanceof Error ? error.message : String(error);
      }
      const base = { id: schedule.id, revision: schedule.revision, now };
      const recorded = nextFireAt
        ? await this.store.finishSync({ ...base, ok: true, nextFireAt })
        : await this.store.finishSync({ ...base, ok: false, error: problem ?? 'unknown error' });
      if (!recorded) continue;
      if (nextFireAt) synced += 1;
      else failed += 1;
    }
    return { synced, failed, more: pending.length === BATCH };
  }

  /** Fires every synced schedule whose next tick is due, at most one event per schedule per pass. */
  async fireDue(now: Date = this.clock.now()): Promise<{ fired: number; skipped: number; more: boolean }> {
    let fired = 0;
    let skipped = 0;
    const due = await this.store.due(now, BATCH);
    for (const schedule of due) {
      try {
        const outcome = await this.fireOne(schedule, now);
        if (outcome === 'fired') {
          fired += 1;
          this.onFired(schedule.queueId);
        } else if (outcome === 'skipped') skipped += 1;
      } catch (error) {
        this.log.error({ err: error, scheduleId: schedule.id }, 'schedule tick failed');
      }
    }
    return { fired, skipped, more: due.length === BATCH };
  }

  private fireOne(schedule: ScheduleRow, now: Date) {
    const cron = parseCron(schedule.cronExpression, schedule.timezone);
    const tick = latestTickUpTo(cron, schedule.nextFireAt!, now);
    const tooOld = schedule.maxEventAgeSeconds !== null && tick.getTime() + schedule.maxEventAgeSeconds * 1000 <= now.getTime();
    const nextFireAt = nextTick(cron, now);
    return this.db.transaction((tx) =>
      new ScheduleStore(tx).fire({ schedule, tick: tooOld ? null : tick, nextFireAt, eventId: newId(now.getTime()), now }),
    );
  }
}
