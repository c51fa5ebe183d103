import { and, asc, desc, eq, lt, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { isCheckViolation } from '../../platform/db-errors.js';
import type { IntentEventSink } from './event-sink.js';
import { paymentIntentDepositTransfers as transfers, paymentIntentRefunds as refunds, paymentIntents as intents } from './tables.js';

export type RefundRow = typeof refunds.$inferSelect;

/**
 * SQL of refunds. Exactly once, stated once: a refund's cents are reserved on its intent by one conditional UPDATE
 * (`refunded + amount` within what was received, and the table's CHECK says the same) in the transaction that
 * inserts the refund, so two refunds racing for the last cents serialize on the intent's row and the second
 * matches nothing; `pending → succeeded | failed` is one conditional UPDATE, a failure giving the cents back and a
 * success publishing payment_intent.refunded in the same transaction.
 */
export class RefundStore {
  constructor(
    private readonly db: Db,
    private readonly events: IntentEventSink,
  ) {}

  async refund(id: string): Promise<RefundRow | undefined> {
    const [row] = await this.db.select().from(refunds).where(eq(refunds.id, id));
    return row;
  }

  async refundsOf(intentId: string): Promise<RefundRow[]> {
    return this.db.select().from(refunds).where(eq(refunds.intentId, intentId)).orderBy(desc(refunds.id));
  }

  /** Who sent the intent's first deposit (the refund's recipient when no x402 payment settled it). */
  async firstDepositor(intentId: string): Promise<string | undefined> {
    const [row] = await this.db.select({ from: transfers.from }).from(transfers).where(eq(transfers.intentId, intentId)).orderBy(asc(transfers.blockNumber), asc(transfers.logIndex)).limit(1);
    return row?.from;
  }

  /** Reserves the refund's cents on its intent and inserts it, atomically; null when they are more than is left to refund. */
  async reserve(row: Omit<RefundRow, 'status' | 'transactionHash' | 'failureCode' | 'failureMessage' | 'updatedAt'>): Promise<RefundRow | null> {
    try {
      return await this.db.transaction(async (tx) => {
        const [reserved] = await tx
          .update(intents)
          .set({ refundedUsdCents: sql`${intents.refundedUsdCents} + ${row.amountUsdCents}` })
          .where(and(eq(intents.id, row.intentId), eq(intents.projectId, row.projectId), sql`(${intents.refundedUsdCents} + ${row.amountUsdCents})::numeric * 10000 <= ${intents.receivedAmount}`))
          .returning({ id: intents.id });
        if (!reserved) return null;
        const [inserted] = await tx
          .insert(refunds)
          .values({ ...row, status: 'pending', updatedAt: row.createdAt })
          .returning();
        return inserted!;
      });
    } catch (error) {
      // The CHECK is the last word should the conditional UPDATE ever be wrong.
      if (isCheckViolation(error, 'payment_intents_refunded_check')) return null;
      throw error;
    }
  }

  /** pending → succeeded with its transaction, publishing payment_intent.refunded; false when it was not pending. */
  async succeed(id: string, transactionHash: string, now: Date): Promise<boolean> {
    let queues: string[] = [];
    const moved = await this.db.transaction(async (tx) => {
      const [refund] = await tx
        .update(refunds)
        .set({ status: 'succeeded', transactionHash, failureCode: null, failureMessage: null, updatedAt: now })
        .where(and(eq(refunds.id, id), eq(refunds.status, 'pending')))
        .returning();
      if (!refund) return false;
      const [intent] = await tx.select().from(intents).where(eq(intents.id, refund.intentId));
      queues = await this.events.publishRefund(tx, intent!, refund);
      return true;
    });
    this.events.announce(queues);
    return moved;
  }

  /** pending → failed (nothing was paid), its cents given back to the intent; false when it was not pending. */
  async fail(id: string, failure: { code: string; message: string }, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [refund] = await tx
        .update(refunds)
        .set({ status: 'failed', failureCode: failure.code, failureMessage: failure.message, updatedAt: now })
        .where(and(eq(refunds.id, id), eq(refunds.status, 'pending')))
        .returning();
      if (!refund) return false;
      await tx.update(intents).set({ refundedUsdCents: sql`${intents.refundedUsdCents} - ${refund.amountUsdCents}` }).where(eq(intents.id, refund.intentId));
      return true;
    });
  }

  /** Refunds pending since before `before`, oldest first: the reconciler's list. */
  async pendingSince(before: Date, limit: number): Promise<RefundRow[]> {
    return this.db
      .select()
      .from(refunds)
      .where(and(eq(refunds.status, 'pending'), lt(refunds.createdAt, before)))
      .orderBy(asc(refunds.createdAt))
      .limit(limit);
  }
}
