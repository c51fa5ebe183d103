import type { Executor } from '../../platform/db.js';
import type { IntentRow } from './tables.js';

// Below the stores, which take the port, and below events.ts, which builds the real one and reads the stores'
// rows: so neither imports the other back.

/** The store's port to the events (through the projects and events modules' services, never their tables). */
export interface IntentEventSink {
  /**
   * Publishes the event of each row that reached a publishing status into its project's intent-events
   * queue, inside `tx` (the transaction of the move). Returns the queues published into.
   */
  publish(tx: Executor, rows: readonly IntentRow[]): Promise<string[]>;
  /** Publishes payment_intent.refunded for a refund that succeeded, inside `tx` (the refund's move). */
  publishRefund(tx: Executor, row: IntentRow, refund: { id: string; amountUsdCents: number; transactionHash: string | null }): Promise<string[]>;
  /** After the commit: wakes the consumers waiting on these queues (a hint; they re-check on their own too). */
  announce(queueIds: readonly string[]): void;
}

/** No events (a store built without the events area, e.g. in a unit test). */
export const noIntentEvents: IntentEventSink = { publish: async () => [], publishRefund: async () => [], announce: () => {} };
