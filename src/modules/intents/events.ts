import type { AppContext } from '../../context.js';
import type { IntentEventSink } from './event-sink.js';
import type { IntentRow, IntentStatus } from './tables.js';
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
  type: `payment_intent.${EventStatus}` | 'payment_intent.refunded';
  intentId: string;
  merchantId: string;
  externalId: string;
  status: IntentStatus;
  amountUsdCents: number;
  /** The intent's metadata as the merchant created it (null when none). */
  metadata: Record<string, unknown> | null;
  /** The failure's code for payment_intent.failed (e.g. settlement_mismatch); null otherwise. */
  failureCode: string | null;
  /** How it was paid (`x402`, `deposit`), null unless settled. */
  paidVia: string | null;
  /** As in the settlement body of pay: null unless settled. */
  settlement: ReturnType<typeof settlementBody>['settlement'];
}

/** A refund that went through (payment_intent.refunded): the refund and what the intent has refunded in all. */
export interface RefundEvent extends IntentEvent {
  type: 'payment_intent.refunded';
  refund: { id: string; amountUsdCents: number; transaction: string | null };
  refundedUsdCents: number;
}

const publishes = (row: IntentRow): row is IntentRow & { status: EventStatus } => (EVENT_STATUSES as readonly string[]).includes(row.status);

/** The event of a row that has just reached a publishing status; null for any other status. */
export function intentEventOf(row: IntentRow): IntentEvent | null {
  if (!publishes(row)) return null;
  return { ...eventBodyOf(row), type: `payment_intent.${row.status}` };
}

function eventBodyOf(row: IntentRow): Omit<IntentEvent, 'type'> {
  return {
    intentId: row.id,
    merchantId: row.merchantId,
    externalId: row.externalId,
    status: row.status,
    amountUsdCents: row.amountUsdCents,
    metadata: (row.metadata as Record<string, unknown> | null) ?? null,
    failureCode: row.status === 'failed' ? row.failureCode : null,
    paidVia: row.paidVia,
    settlement: settlementBody(row).settlement,
  };
}

/** The event of a refund that has just succeeded, `row` the intent after it. */
export function refundEventOf(row: IntentRow, refund: { id: string; amountUsdCents: number; transactionHash: string | null }): RefundEvent {
  return {
    ...eventBodyOf(row),
    type: 'payment_intent.refunded',
    refund: { id: refund.id, amountUsdCents: refund.amountUsdCents, transaction: refund.transactionHash },
    refundedUsdCents: row.refundedUsdCents,
  };
}

export const deduplicationKeyOf = (row: Pick<IntentRow, 'id' | 'status'>) => `payment_intent:${row.id}:${row.status}`;
/** One event per refund, whatever moves it: its own namespace beside the statuses'. */
export const refundDeduplicationKeyOf = (intentId: string, refundId: string) => `payment_intent:${intentId}:refund:${refundId}`;

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
    async publishRefund(tx, row, refund) {
      const queueId = (await ctx.services.projects.intentEventsQueues(tx, [row.projectId])).get(row.projectId);
      if (!queueId) return [];
      if (!ctx.services.events) throw new Error('payment-intent events need the events module');
      const input = { payload: { ...refundEventOf(row, refund) }, deduplicationKey: refundDeduplicationKeyOf(row.id, refund.id) };
      return (await ctx.services.events.batches.publishInTransaction(tx, row.projectId, queueId, [input])) > 0 ? [queueId] : [];
    },
    announce(queueIds) {
      for (const queueId of queueIds) ctx.services.events?.batches.announce(queueId);
    },
  };
}
