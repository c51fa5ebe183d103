import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { newId } from '../../platform/ids.js';
import { nextTick, parseCron, ticksUpTo } from './cron.js';
import { ScheduleStore, type BackfillPolicy, type ScheduleRow } from './schedule-store.js';

/** Schedules handled per pass; a full batch makes the loop run again at once. */
const BATCH = 100;
/** Backfill `all` enqueues at most this many of the most recent missed ticks. */
export const BACKFILL_LIMIT = 1000;
/** Ticks one schedule fires per pass (the rest in the next passes, run at once). */
const PER_PASS = 100;
/** Backfill `none`: a tick this late counts as missed, not as on time. */
export const ON_TIME_MS = 60_000;

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
 * Backfill: ticks that came due while no scheduler ran (downtime, or a pass that ran late) are
 * handled by the schedule's `backfill` policy; each tick that is enqueued goes through its overlapPolicy:
 *   - `latest` (default): only the latest missed tick is enqueued; older ones are dropped.
 *   - `none`: a tick more than ON_TIME_MS late is dropped; the schedule waits for its next tick.
 *   - `all`: every missed tick is enqueued, oldest first, up to the BACKFILL_LIMIT most recent ones.
 * A missed tick older than the schedule's maxEventAgeSeconds is never enqueued.
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

  /** Fires every synced schedule whose next tick is due, per its backfill policy. */
  async fireDue(now: Date = this.clock.now()): Promise<{ fired: number; skipped: number; more: boolean }> {
    let fired = 0;
    let skipped = 0;
    let more = false;
    const due = await this.store.due(now, BATCH);
    for (const schedule of due) {
      try {
        const outcome = await this.fireOne(schedule, now);
        fired += outcome.fired;
        skipped += outcome.skipped;
        more ||= outcome.more;
        if (outcome.fired > 0) this.onFired(schedule.queueId);
      } catch (error) {
        this.log.error({ err: error, scheduleId: schedule.id }, 'schedule tick failed');
      }
    }
    return { fired, skipped, more: more || due.length === BATCH };
  }

  /**
   * Fires the schedule's due ticks that its backfill policy keeps, each in its own transaction that
   * advances `next_fire_at` from the tick before (so each tick is won once), at most PER_PASS a pass.
   */
  private async fireOne(schedule: ScheduleRow, now: Date): Promise<{ fired: number; skipped: number; more: boolean }> {
    const cron = parseCron(schedule.cronExpression, schedule.timezone);
    const backfill = schedule.backfill as BackfillPolicy;
    const missed = ticksUpTo(cron, schedule.nextFireAt!, now, backfill === 'all' ? BACKFILL_LIMIT : 1);
    const kept = backfill === 'none' ? missed.filter((tick) => now.getTime() - tick.getTime() <= ON_TIME_MS) : missed;
    const firing = kept.slice(0, PER_PASS);
    const after = kept.length > PER_PASS ? kept[PER_PASS] : nextTick(cron, now);
    // Nothing kept: only advance past the dropped ticks.
    const steps = firing.length ? firing : [null];
    const ids = steps.map(() => newId(now.getTime())).sort();
    const result = { fired: 0, skipped: 0, more: kept.length > PER_PASS };
    let expected = schedule.nextFireAt;
    for (const [i, tick] of steps.entries()) {
      const tooOld = tick !== null && schedule.maxEventAgeSeconds !== null && tick.getTime() + schedule.maxEventAgeSeconds * 1000 <= now.getTime();
      const nextFireAt = i + 1 < steps.length ? steps[i + 1] : after;
      const outcome = await this.db.transaction((tx) =>
        new ScheduleStore(tx).fire({ schedule: { ...schedule, nextFireAt: expected }, tick: tooOld ? null : tick, nextFireAt, eventId: ids[i], now }),
      );
      if (outcome === 'lost') break;
      if (outcome === 'fired') result.fired += 1;
      else result.skipped += 1;
      expected = nextFireAt;
    }
    return result;
  }
}
