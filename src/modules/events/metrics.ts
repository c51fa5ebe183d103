import type { AppContext } from '../../context.js';
import { QueueDepthStore } from './depth-store.js';
import type { EventsServices } from './services.js';

/** Queues with a depth series of their own: the deepest ones, so the label stays bounded however many queues tenants make. */
export const DEEPEST_QUEUES = 20;

/**
 * Queue depth by state and lease expiries over all queues, and the depth of each of the deepest
 * DEEPEST_QUEUES queues (label: queue id), read at scrape time.
 */
export function registerEventMetrics(ctx: Pick<AppContext, 'metrics' | 'db'>, { events }: EventsServices): void {
  // Both totals gauges read one query: a scrape collects them together, so they share the one in flight.
  let inFlight: ReturnType<typeof events.openTotals> | null = null;
  const totals = () => (inFlight ??= events.openTotals().finally(() => (inFlight = null)));
  ctx.metrics.gauge('tollgate_queue_events', 'Open events of all queues by state (ready, delayed, leased, dead)', ['state'], async (set) => {
    const { leaseExpiries: _, ...states } = await totals();
    for (const [state, count] of Object.entries(states)) set({ state }, count);
  });
  ctx.metrics.gauge('tollgate_queue_lease_expiries', 'Leases that ran out without ack or nack, over all queues, since each was created', [], async (set) => {
    set({}, (await totals()).leaseExpiries);
  });
  const store = new QueueDepthStore(ctx.db);
  // Depth and age come from the one query a scrape makes.
  let depthsInFlight: ReturnType<typeof store.deepest> | null = null;
  const depths = () => (depthsInFlight ??= store.deepest(DEEPEST_QUEUES).finally(() => (depthsInFlight = null)));
  ctx.metrics.gauge('tollgate_queue_depth', `Open events of each of the ${DEEPEST_QUEUES} deepest queues by state (ready, delayed, leased)`, ['queue', 'state'], async (set) => {
    for (const { queueId, ready, delayed, leased } of await depths()) {
      set({ queue: queueId, state: 'ready' }, ready);
      set({ queue: queueId, state: 'delayed' }, delayed);
      set({ queue: queueId, state: 'leased' }, leased);
    }
  });
  ctx.metrics.gauge('tollgate_queue_oldest_ready_age_seconds', `How long the oldest ready event of each of the ${DEEPEST_QUEUES} deepest queues has waited to be claimed`, ['queue'], async (set) => {
    for (const { queueId, oldestReadySeconds } of await depths()) set({ queue: queueId }, Number(oldestReadySeconds));
  });
}
