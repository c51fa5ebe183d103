import { integer, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Which on-chain transfer backs which service. A `Transfer` log paired with its own `AuthorizationUsed`
 * (see pairPaymentLogs) is one payment, and it buys one thing, ever: the facilitator's one
 * `success: true`, or one module's grant found on chain (an intent, an upload order, a top-up, a charge).
 * The primary key is the whole rule; whoever inserts the row first has the payment, everyone else is told
 * it is used. Rows are never deleted.
 */
export const chainPaymentUses = pgTable(
  'chain_payment_uses',
  {
    network: text('network').notNull(),
    /** Lowercase 0x hex. */
    transactionHash: text('transaction_hash').notNull(),
    /** The Transfer log's index in its block. */
    logIndex: integer('log_index').notNull(),
    /** Checksummed token, authorizer and payee; the authorization's nonce in lowercase hex. */
    asset: text('asset').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    payTo: text('pay_to').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    /** What the payment bought: `x402-settlement` (the facilitator's answer) or `<module>:<id>`. */
    claimant: text('claimant').notNull(),
    claimedAt: timestamp('claimed_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.network, t.transactionHash, t.logIndex] })],
);

export type PaymentUseRow = typeof chainPaymentUses.$inferSelect;
