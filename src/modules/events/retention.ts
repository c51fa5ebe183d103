import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { PURGE } from './limits.js';
import { RetentionStore } from './retention-store.js';

/**
 * The retention purge (leader loop `events.retention`): finished events leave the table once their
 * queue's retention has passed since they finished, so the table (and every index on it) holds the
 * backlog plus the retention window, not the whole history. Bounded work per run: a few statements
 * of `PURGE.batch` rows each; a run whose last statement was full asks to run again at once.
 */
export class Retention {
  private readonly store: RetentionStore;

  constructor(
    db: Db,
    private readonly clock: Clock,
    options: { databaseTime: boolean },
  ) {
    this.store = new RetentionStore(db, options.databaseTime);
  }

  /** One run: returns whether more may be due (the last batch was full) and how many were deleted. */
  async purge(now: Date = this.clock.now()): Promise<{ purged: number; more: boolean }> {
    let purged = 0;
    for (let statement = 0; statement < PURGE.statementsPerRun; statement++) {
      const deleted = await this.store.purgeFinished(now, PURGE.batch);
      purged += deleted;
      if (deleted < PURGE.batch) return { purged, more: false };
    }
    return { purged, more: true };
  }
}
