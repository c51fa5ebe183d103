import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, numeric, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The facilitator's settlement ledger: one row per EIP-3009 authorization, keyed by
 * (network, asset, payer, nonce), which the token itself treats as single-use. The row is claimed
 * before anything is broadcast and the transaction hash is written the moment the relayer sends,
 * so a retry or a restarted node resumes the same settlement instead of broadcasting again.
 *
 * status: claimed (a settle owns it, nothing known on chain yet) -> broadcast (tx hash known)
 *         -> settled | failed (final; `response` holds the SettleResponse returned to every retry).
 */
export const x402Settlements = pgTable(
  'x402_settlements',
  {
    network: text('network').notNull(),
    /** Checksummed token address. */
    asset: text('asset').notNull(),
    /** Checksummed authorizer (authorization.from). */
    payer: text('payer').notNull(),
    /** authorization.nonce, lowercase 0x hex. */
    nonce: text('nonce').notNull(),
    payTo: text('pay_to').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    validBefore: numeric('valid_before', { precision: 78, scale: 0 }).notNull(),
    /** The payer's signature: the SDK's PendingSettlementStore key. */
    signature: text('signature').notNull(),
    /** Hash of the authorization, signature and payment terms: tells a retry from a different payload. */
    payloadHash: text('payload_hash').notNull(),
    status: text('status').notNull(),
    /** Which settle attempt owns the claim; finalizing writes check it. */
    claimToken: text('claim_token').notNull(),
    claimedAt: timestamp('claimed_at', { withTimezone: true }).notNull(),
    /** Chain height when claimed: where the reconciler starts looking for the authorization's logs. */
    fromBlock: bigint('from_block', { mode: 'number' }).notNull(),
    txHash: text('tx_hash'),
    errorReason: text('error_reason'),
    errorMessage: text('error_message'),
    response: jsonb('response'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.network, t.asset, t.payer, t.nonce] }),
    index('x402_settlements_signature_idx').on(t.signature),
    // The reconciler scans only the open rows.
    index('x402_settlements_open_idx').on(t.updatedAt).where(sql`${t.status} in ('claimed', 'broadcast')`),
  ],
);

export type SettlementRow = typeof x402Settlements.$inferSelect;
