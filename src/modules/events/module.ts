import type { AppContext } from '../../context.js';
import type { Module, ModuleFactory } from '../module.js';
import { registerEventRoutes } from './event-routes.js';
import { EVENTS_CHANNEL } from './limits.js';
import { registerQueueRoutes } from './queue-routes.js';
import { registerScheduleRoutes } from './schedule-routes.js';
import { registerEventMetrics } from './metrics.js';
import { createEventsServices, type EventsOptions, type EventsServices } from './services.js';

declare module '../../context.js' {
  interface Services {
    /** Queues and schedules for other modules' own background work (under a project id of their own). */
    events: EventsServices;
  }
}

/** Events: queues, lease-based consumption with long polls, and cron schedules. */
export const eventsModule: ModuleFactory = (ctx) => createEventsModule(ctx);

/** The module with non-default options (the benchmark compares durable lease commits). */
export const eventsModuleWith =
  (options: EventsOptions): ModuleFactory =>
  (ctx) =>
    createEventsModule(ctx, options);

async function createEventsModule(ctx: AppContext, options: EventsOptions = {}): Promise<Module> {
  const services = createEventsServices(ctx, options);
  ctx.services.events = services;
  // Publishes on any node (and schedule ticks) NOTIFY the queue id; waiting claims here wake up.
  const unlisten = await ctx.database.listen(EVENTS_CHANNEL, (queueId) => services.waiters.wake(queueId));
  registerEventMetrics(ctx, services);
  return {
    name: 'events',
    routes: {
      api: (app) => {
        // Waiting claims answer "no work" at once instead of holding shutdown for up to waitSeconds.
        app.addHook('preClose', async () => services.waiters.close());
        registerQueueRoutes(app, ctx, services);
        registerEventRoutes(app, ctx, services);
        registerScheduleRoutes(app, ctx, services);
      },
    },
    loops: [
      { name: 'events.scheduler', intervalMs: 1000, leader: true, run: async () => (await services.scheduler.tick()).more },
      { name: 'events.sweeper', intervalMs: 1000, run: () => services.sweeper.sweep() },
      // Leader only: concurrent purgers would contend for the same oldest rows.
      { name: 'events.retention', intervalMs: 5000, leader: true, run: async () => (await services.retention.purge()).more },
    ],
    async close() {
      services.waiters.close();
      services.notifier.close();
      await unlisten();
    },
  };
}
