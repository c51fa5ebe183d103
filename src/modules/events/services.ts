import type { AppContext } from '../../context.js';
import { systemClock } from '../../platform/clock.js';
import { EventBatchService } from './event-batch-service.js';
import { EventService } from './event-service.js';
import { QueueService } from './queue-service.js';
import { Retention } from './retention.js';
import { Scheduler } from './scheduler.js';
import { ScheduleService } from './schedule-service.js';
import { Sweeper } from './sweeper.js';
import { QueueNotifier } from './notifier.js';
import { ClaimWaiters } from './waiters.js';

/** The Events area's services, wired once per process (tests build their own over a test app's ctx). */
export interface EventsServices {
  queues: QueueService;
  events: EventService;
  batches: EventBatchService;
  schedules: ScheduleService;
  scheduler: Scheduler;
  sweeper: Sweeper;
  retention: Retention;
  waiters: ClaimWaiters;
  notifier: QueueNotifier;
}

export interface EventsOptions {
  /** See EventStoreOptions; off by default. */
  asyncLeaseCommits?: boolean;
  /** See EventStoreOptions; on unless the context's clock is a test clock. */
  databaseTime?: boolean;
}

export function createEventsServices(ctx: Pick<AppContext, 'database' | 'clock' | 'hasher' | 'log'>, options: EventsOptions = {}): EventsServices {
  const { database, clock } = ctx;
  // Leases run on the database's clock, unless a test moves time by hand (see EventStoreOptions).
  const storeOptions = { asyncLeaseCommits: options.asyncLeaseCommits ?? false, databaseTime: options.databaseTime ?? clock === systemClock };
  const waiters = new ClaimWaiters();
  const notifier = new QueueNotifier(database, ctx.log);
  const events = new EventService(database, clock, ctx.hasher, waiters, notifier, storeOptions);
  return {
    queues: new QueueService(database.db, clock),
    events,
    batches: new EventBatchService(database.db, clock, ctx.hasher, events, storeOptions),
    schedules: new ScheduleService(database.db, clock),
    scheduler: new Scheduler(database.db, clock, ctx.log, (queueId) => events.announce(queueId)),
    sweeper: new Sweeper(database.db, clock, storeOptions),
    retention: new Retention(database.db, clock, storeOptions),
    waiters,
    notifier,
  };
}
