import type { AppContext } from '../../context.js';
import type { EventsServices } from './services.js';

/** Queue depth by state and lease expiries, over all queues (no per-queue label: bounded series), read at scrape time. */
export function registerEventMetrics(ctx: Pick<AppContext, 'metrics'>, { events }: EventsServices): void {
  // Both gauges read one query: a scrape collects them together, so they share the one in flight.
  let inFlight: ReturnType<typeof events.openTotals> | null = null;
  const totals = () => (inFlight ??= events.openTotals().finally(() => (inFlight = null)));
  ctx.metrics.gauge('tollgate_queue_events', 'Open events of all queues by state (ready, delayed, leased, dead)', ['state'], async (set) => {
    const { leaseExpiries: _, ...states } = await totals();
    for (const [state, count] of Object.entries(states)) set({ state }, count);
  });
  ctx.metrics.gauge('tollgate_queue_lease_expiries', 'Leases that ran out without ack or nack, over all queues, since each was created', [], async (set) => {
    set({}, (await totals()).leaseExpiries);
  });
}
