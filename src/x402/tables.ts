import { sql } from 'drizzle-orm';
import { bigint, index, integer, numeric, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../platform/db-types.js';

/**
 * The facilitator's settlement ledger: one row per authorization, keyed by (network, asset, payer, nonce), the
 * nonce domain that treats it as single-use (the token for EIP-3009, Permit2 for Permit2 permits: see `kind`). The row is claimed
 * before anything is broadcast and the transaction hash is written the moment the relayer sends,
 * so a retry or a restarted node resumes the same settlement instead of broadcasting again.
 *
 * status: claimed (a settle owns it, nothing known on chain yet) -> broadcast (tx hash known)
 *         -> settled | failed (final; `response` holds the first SettleResponse).
 *
 * `success: true` is answered at most once per row: `success_answered_at` is set by the one call that
 * hands it out. Every later settle of the authorization is told `nonce_already_used`, except a retry
 * carrying the row's x402 `payment-identifier` id with the same payload, which gets `response` back.
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
    /**
     * How the authorization executes and is judged from the chain: `eip3009` (the token's transferWithAuthorization:
     * asset is the token, nonce its EIP-3009 nonce), `permit2-exact` / `permit2-upto` (the x402 Permit2 proxies: asset
     * is Permit2, whose nonces are the payer's across every token, nonce the permit's as 32-byte hex; validBefore its
     * deadline; amount what the settle moves), `batch-deposit` (a batch-settlement channel deposit through the ERC-3009
     * collector: the token's nonce, payTo the collector).
     */
    kind: text('kind').notNull().default('eip3009'),
    /** The token that moves, when `asset` is not it (Permit2 rows); null: `asset` is the token. */
    token: text('token'),
    /** The settle request as claimed ({ payload, requirements }): what a takeover executes after its owner died. */
    request: guardedJsonb('request'),
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
    /** The Transfer log (paired with this authorization's AuthorizationUsed) that paid a settled row. */
    transferLogIndex: integer('transfer_log_index'),
    /** The x402 payment-identifier id of the settle that claimed the row, if it sent one. */
    paymentId: text('payment_id'),
    /** When `success: true` was handed out (once, ever). */
    successAnsweredAt: timestamp('success_answered_at', { withTimezone: true }),
    errorReason: text('error_reason'),
    errorMessage: text('error_message'),
    response: guardedJsonb('response'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.network, t.asset, t.payer, t.nonce] }),
    index('x402_settlements_signature_idx').on(t.signature),
    // One payload per payment-identifier id (scoped by payer): another payload under it is a conflict.
    uniqueIndex('x402_settlements_payment_id_idx').on(t.payer, t.paymentId).where(sql`${t.paymentId} is not null`),
    // No index covers a column an update changes (status, tx_hash, updated_at, claimed_at, the answer mark...):
    // every update after the claim stays HOT (fillfactor 50, migration 0042). The reconciler's work list is
    // x402_settlements_open below, not an index here.
  ],
);

/**
 * The keys of the settlement rows still open (claimed or broadcast): the reconciler's work list. A row is
 * added in the claim's INSERT statement and removed in the statement that writes its outcome (or releases
 * it), as data-modifying CTEs, so it costs no round trip and is never out of step with the row's status.
 * Chosen over a claimed_at window on x402_settlements because a tick then reads only the open rows, however
 * many have settled, with no window, cursor or periodic sweep to tune; its rows are only inserted and deleted.
 */
export const x402SettlementsOpen = pgTable(
  'x402_settlements_open',
  {
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.asset, t.payer, t.nonce] })],
);

export type SettlementRow = typeof x402Settlements.$inferSelect;

/**
 * Every address that sends settlement transactions for this deployment, per network: each facilitator
 * instance's relayer keys (registered when its context starts, before it can send anything) and
 * FACILITATOR_SIGNERS (an external facilitator's senders). The chain indexer reads this each tick, so a
 * worker indexes every node's settlements. Rows are never deleted: a rotated-out key's transactions
 * stay attributable, and one still in flight is indexed when it lands.
 */
export const x402FacilitatorSigners = pgTable(
  'x402_facilitator_signers',
  {
    /** CAIP-2 network, e.g. eip155:4663. */
    network: text('network').notNull(),
    /** Checksummed address. */
    address: text('address').notNull(),
    /** How it was first registered: `relayer` (a facilitator instance's key) or `config` (FACILITATOR_SIGNERS). */
    source: text('source').notNull(),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true }).notNull(),
    /** Last time a node started with this signer. */
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.address] })],
);

/**
 * What one payment bought at our own paid endpoints (ctx.x402.charge): one row per authorization, written
 * before its settle, so the payer's retry after a lost answer gets the same result again instead of
 * `nonce_already_used`, and no payment buys two responses. `settling` (the outcome is not known yet: a
 * retry settles the same record again) → `settled` (`settlement` is what the first answer carried).
 * A definitive refusal deletes the row: nothing moved, the authorization may be sent again.
 */
export const x402PaidRequests = pgTable(
  'x402_paid_requests',
  {
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    /** The resource URL the payment bought: a payment buys this one resource. */
    resource: text('resource').notNull(),
    /** payloadHashOf: the same payment, not another one reusing its nonce. */
    payloadHash: text('payload_hash').notNull(),
    /** The client's own x402 payment-identifier, if it sent one: then only a retry carrying it gets the result. */
    clientPaymentId: text('client_payment_id'),
    /** Names this purchase's settles (X402Service.settle's record): the same on every retry. */
    recordId: text('record_id').notNull(),
    status: text('status').notNull(),
    settlement: guardedJsonb('settlement'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.asset, t.payer, t.nonce] })],
);

export type PaidRequestRow = typeof x402PaidRequests.$inferSelect;
