import type { Logger } from 'pino';
import type { EventsServices } from '../events/services.js';
import { TICK_LEASE_SECONDS, TRADING_PROJECT, type RuntimeSchedules } from './schedules.js';
import type { TickRunner } from './ticks.js';
import type { AlignTarget } from './reconcile.js';

/** Tick events leased per claim: small, so one slow worker does not sit on ticks another could run. */
const CLAIM_BATCH = 20;
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
    for (const { event, leaseToken } of claimed) {
      const runtimeId = (event.payload as { runtimeId?: unknown }).runtimeId;
      if (typeof runtimeId !== 'string' || !event.scheduledFor) {
        acks.push({ eventId: event.id, leaseToken }); // not a tick of ours: nothing to run
        continue;
      }
      try {
        const result = await this.runner.run(runtimeId, 'schedule', event.scheduledFor, event.attempts);
        if (result.ran && result.movedToReview) await this.afterReview(result.runtime).catch((error) => this.log.warn({ err: error, runtimeId }, 'pausing a reviewed runtime failed; the reconciler will'));
        acks.push({ eventId: event.id, leaseToken });
      } catch (error) {
        this.log.warn({ err: error, runtimeId, scheduledAt: event.scheduledFor }, 'trading tick failed');
        nacks.push({ eventId: event.id, leaseToken, error: error instanceof Error ? error.message : String(error), retryDelaySeconds: RETRY_DELAY_SECONDS });
      }
    }
    if (acks.length) await events.batches.ackMany(TRADING_PROJECT, acks);
    if (nacks.length) await events.batches.nackMany(TRADING_PROJECT, nacks);
    return claimed.length;
  }
}
