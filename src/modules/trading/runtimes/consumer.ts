import type { Logger } from 'pino';
import type { EventsServices } from '../../events/services.js';
import { TICK_LEASE_SECONDS, TRADING_PROJECT, type RuntimeSchedules } from './schedules.js';
import type { TickRunner } from '../engine/ticks.js';
import type { AlignTarget } from './reconcile.js';

/** Tick events leased per claim and run as one batch (one read, one commit); small enough that two workers share a tick evenly. */
const CLAIM_BATCH = 50;
/** A failed tick is tried again after this (its event's attempts bound the tries). */
const RETRY_DELAY_SECONDS = 5;

/**
 * The worker side of scheduled executions: leases fired ticks from trading's queue, runs each, and
 * acks it once its execution is recorded (nack on failure, so the event is retried). Any number of
 * workers may consume: TickRunner makes a tick delivered twice run once.
 */
export class TickConsumer {
  constructor(
    private readonly events: () => EventsServices,
    private readonly schedules: RuntimeSchedules,
    private readonly runner: TickRunner,
    private readonly afterReview: (runtime: AlignTarget) => Promise<void>,
    private readonly log: Logger,
  ) {}

  /** One batch: the number of ticks handled (0 when none were due). */
  async drain(): Promise<number> {
    const events = this.events();
    const claimed = await events.batches.claimMany(TRADING_PROJECT, await this.schedules.queueId(), CLAIM_BATCH, { leaseSeconds: TICK_LEASE_SECONDS, waitSeconds: 0 });
    const acks: { eventId: string; leaseToken: string }[] = [];
    const nacks: { eventId: string; leaseToken: string; error: string; retryDelaySeconds: number }[] = [];
    const ticks = [];
    for (const { event, leaseToken } of claimed) {
      const runtimeId = (event.payload as { runtimeId?: unknown }).runtimeId;
      if (typeof runtimeId === 'string' && event.scheduledFor) ticks.push({ runtimeId, scheduledAt: event.scheduledFor, attempt: event.attempts, lease: { eventId: event.id, leaseToken } });
      else acks.push({ eventId: event.id, leaseToken }); // not a tick of ours: nothing to run
    }
    const results = await this.runner.runMany('schedule', ticks);
    for (const [i, result] of results.entries()) {
      const { lease, runtimeId, scheduledAt } = ticks[i]!;
      if (!result.ran && result.reason === 'failed') {
        this.log.warn({ err: result.error, runtimeId, scheduledAt }, 'trading tick failed');
        nacks.push({ ...lease, error: result.error.message, retryDelaySeconds: RETRY_DELAY_SECONDS });
        continue;
      }
      if (!result.ran && result.reason === 'placing') {
        // Another worker is placing the runtime's order: this tick runs once that order's fill is in.
        nacks.push({ ...lease, error: "the runtime's order is being placed by another worker", retryDelaySeconds: RETRY_DELAY_SECONDS });
        continue;
      }
      if (result.ran && result.movedToReview) await this.afterReview(result.runtime).catch((error) => this.log.warn({ err: error, runtimeId }, 'pausing a reviewed runtime failed; the reconciler will'));
      acks.push(lease);
    }
    if (acks.length) await events.batches.ackMany(TRADING_PROJECT, acks);
    if (nacks.length) await events.batches.nackMany(TRADING_PROJECT, nacks);
    return claimed.length;
  }
}
