import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import type { ApprovalView } from './policy-schemas.js';
import { PolicyStore } from './policy-store.js';

// Approval-request events (docs/wallets.md#approval-events): a wallet's owner may name an event queue of one of
// their projects, and every new approval request of the wallet's spend policy publishes one event there, in the
// transaction that asks for it (spend-guard.ts), so a person can be paged. The same call asked again waits on
// the same approval and publishes nothing; the deduplication key `wallet_approval:${id}:requested` makes a
// repeated transaction publish nothing a second time. A queue deleted later is skipped (nothing published).

export interface ApprovalRequestedEvent {
  type: 'wallet_approval.requested';
  approvalId: string;
  walletId: string;
  approval: ApprovalView;
}

/** The spend guard's port to the events (through the events module's service, never its tables). */
export interface ApprovalEventSink {
  /** Publishes a new approval's event into its wallet's queue inside `tx`; the queue published into, or null. */
  publish(tx: Executor, approval: ApprovalView): Promise<string | null>;
  /** After the commit: wakes the consumers waiting on the queue. */
  announce(queueId: string): void;
}

export function approvalEventSinkOf(ctx: AppContext): ApprovalEventSink {
  return {
    async publish(tx, approval) {
      const target = await new PolicyStore(tx, ctx.clock).approvalQueue(approval.walletId);
      if (!target) return null;
      // Loud on purpose: a queue is configured, so dropping its events silently would break the promise.
      if (!ctx.services.events) throw new Error('approval events need the events module');
      const payload: ApprovalRequestedEvent = { type: 'wallet_approval.requested', approvalId: approval.id, walletId: approval.walletId, approval };
      const inserted = await ctx.services.events.batches.publishInTransaction(tx, target.projectId, target.queueId, [{ payload: { ...payload }, deduplicationKey: `wallet_approval:${approval.id}:requested` }]);
      return inserted > 0 ? target.queueId : null;
    },
    announce(queueId) {
      ctx.services.events?.batches.announce(queueId);
    },
  };
}

/** No events (a guard built without the events area, e.g. in a unit test). */
export const noApprovalEvents: ApprovalEventSink = { publish: async () => null, announce: () => {} };
