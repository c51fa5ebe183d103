import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { EventStoreOptions } from './event-read-store.js';
import { EventStore } from './event-store.js';

const BATCH = 1000;

/**
 * Records what time already decided: leases that ran out (back to `available`, or `dead` after the
 * last attempt) and waiting events past their schedule's maxEventAgeSeconds (`expired`). Claims do not
 * depend on it (they treat an expired lease as claimable); it keeps reads and dead-lists truthful.
 */
export class Sweeper {
  private readonly store: EventStore;

  constructor(
    db: Db,
    private readonly clock: Clock,
    options: EventStoreOptions,
  ) {
    this.store = new EventStore(db, options);
  }

  /** One pass; true when a batch was full (more may be waiting). */
  async sweep(now: Date = this.clock.now()): Promise<boolean> {
    const leases = await this.store.sweepExpiredLeases(now, BATCH);
    const aged = await this.store.sweepAgedEvents(now, BATCH);
    return leases === BATCH || aged === BATCH;
  }
}
