import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import type { IntentStatus } from './tables.js';
import type { IntentRow } from './store.js';
import { settlementBody } from './views.js';

// Payment-intent events (docs/intents.md#intent-events): a project may name one of its event queues, and
// every move of its intents to settled, failed or expired publishes one event there, in the transaction
// of the move. Each of these statuses is final and reached by one conditional UPDATE that only one mover
// wins, so one move yields one publication; the deduplication key `payment_intent:${intentId}:${status}` (a namespace of its own in the queue) makes a repeat
// (of a whole transaction, say) publish nothing a second time.

/** The statuses that publish, each final. */
export const EVENT_STATUSES = ['settled', 'failed', 'expired'] as const satisfies readonly IntentStatus[];
type EventStatus = (typeof EVENT_STATUSES)[number];

export interface IntentEvent {
  type: `payment_intent.${EventStatus}`;
  intentId: string;
  merchantId: string;
  externalId: string;
  status: EventStatus;
  amountUsdCents: number;
  /** As in the settlement body of pay: null unless settled. */
  settlement: ReturnType<typeof settlementBody>['settlement'];
}

const publishes = (row: IntentRow): row is IntentRow & { status: EventStatus } => (EVENT_STATUSES as readonly string[]).includes(row.status);

/** The event of a row that has just reached a publishing status; null for any other status. */
export function intentEventOf(row: IntentRow): IntentEvent | null {
  if (!publishes(row)) return null;
  return {
    type: `payment_intent.${row.status}`,
    intentId: row.id,
    merchantId: row.merchantId,
    externalId: row.externalId,
    status: row.status,
    amountUsdCents: row.amountUsdCents,
    settlement: settlementBody(row).settlement,
  };
}

export const deduplicationKeyOf = (row: Pick<IntentRow, 'id' | 'status'>) => `payment_intent:${row.id}:${row.status}`;

/** The store's port to the events (through the projects and events modules' services, never their tables). */
export interface IntentEventSink {
  /**
   * Publishes the event of each row that reached a publishing status into its project's intent-events
   * queue, inside `tx` (the transaction of the move). Returns the queues published into.
   */
  publish(tx: Executor, rows: readonly IntentRow[]): Promise<string[]>;
  /** After the commit: wakes the consumers waiting on these queues (a hint; they re-check on their own too). */
  announce(queueIds: readonly string[]): void;
}

/** The sink over the projects module (which queue) and the events module (publish in the caller's transaction). */
export function intentEventSinkOf(ctx: AppContext): IntentEventSink {
  return {
    async publish(tx, rows) {
      const moved = rows.filter(publishes);
      if (moved.length === 0) return [];
      const queues = await ctx.services.projects.intentEventsQueues(tx, [...new Set(moved.map((row) => row.projectId))]);
      const published: string[] = [];
      for (const [projectId, queueId] of queues) {
        const inputs = moved
          .filter((row) => row.projectId === projectId)
          .map((row) => ({ payload: { ...intentEventOf(row)! }, deduplicationKey: deduplicationKeyOf(row) }));
        // Loud on purpose: a queue is configured, so dropping its events silently would break the promise.
        if (!ctx.services.events) throw new Error('payment-intent events need the events module');
        if ((await ctx.services.events.batches.publishInTransaction(tx, projectId, queueId, inputs)) > 0) published.push(queueId);
      }
      return published;
    },
    announce(queueIds) {
      for (const queueId of queueIds) ctx.services.events?.batches.announce(queueId);
    },
  };
}

/** No events (a store built without the events area, e.g. in a unit test). */
export const noIntentEvents: IntentEventSink = { publish: async () => [], announce: () => {} };
