import { sql } from 'drizzle-orm';
import { bigint, boolean, check, index, integer, numeric, pgTable, primaryKey, text, timestamp, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { merchants, projects } from '../projects/tables.js';
import { guardedJsonb } from '../../platform/db-types.js';

export const INTENT_STATUSES = ['pending', 'settling', 'settled', 'failed', 'expired'] as const;
export type IntentStatus = (typeof INTENT_STATUSES)[number];
/** How a settled intent was paid: an x402 payment to the pay endpoint, or transfers to its deposit address. */
export const PAID_VIA = ['x402', 'deposit'] as const;
export type PaidVia = (typeof PAID_VIA)[number];
export const REFUND_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/**
 * Payment intents. Exactly-once lives in the constraints: one intent per (merchant, externalId), one
 * intent per authorization (payment_intent_authorizations), one intent per transfer (chain_payment_uses,
 * claimed before an intent settles); every status move is a conditional UPDATE on `status`. A transaction
 * may carry several transfers (a settlement batch), so its hash is not unique here.
 */
export const paymentIntents = pgTable(
  'payment_intents',
  {
    id: uuid('id').primaryKey(),
    /** The merchant's project, copied so reads stay inside the access boundary with one index. */
    projectId: uuid('project_id').notNull().references(() => projects.id),
    merchantId: uuid('merchant_id').notNull().references(() => merchants.id),
    externalId: text('external_id').notNull(),
    customerRef: text('customer_ref'),
    description: text('description'),
    metadata: guardedJsonb('metadata'),
    status: text('status').$type<IntentStatus>().notNull(),
    amountUsdCents: integer('amount_usd_cents').notNull(),
    /** Atomic token units the challenge asks for: amountUsdCents × 10,000 for a 6-decimal dollar token. */
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    currency: text('currency').notNull().default('USD'),
    // Fixed from the merchant at creation: a later merchant change never alters an intent.
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payTo: text('pay_to').notNull(),
    transactionHash: text('transaction_hash'),
    payer: text('payer'),
    /** The authorization being settled (`settling`) or that settled the intent (payment_intent_authorizations). */
    authorizationId: uuid('authorization_id'),
    settlingSince: timestamp('settling_since', { withTimezone: true }),
    failureCode: text('failure_code'),
    failureMessage: text('failure_message'),
    /**
     * The last payment attempt that verified but did not pay the intent, which stayed payable (a settle that
     * moved nothing, an authorization used elsewhere or expired unused, a facilitator that sent nothing).
     * Kept after later moves, as the intent's history; overwritten by the next such attempt.
     */
    lastPaymentErrorCode: text('last_payment_error_code'),
    lastPaymentErrorMessage: text('last_payment_error_message'),
    lastPaymentErrorAt: timestamp('last_payment_error_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    settledAt: timestamp('settled_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** Where the settled checkout links back to (https, or loopback http on the devchain); never redirected to. */
    returnUrl: text('return_url'),
    /** How the settled intent was paid (`x402`, `deposit`); null until settled. */
    paidVia: text('paid_via').$type<PaidVia>(),
    /**
     * Atomic units received for this intent, all of it: the x402 payment that settled it and every transfer to
     * its deposit address (underpaid, over, late). What refunds may return (refunds.ts).
     */
    receivedAmount: numeric('received_amount', { precision: 78, scale: 0 }).notNull().default('0'),
    /** Cents of the refunds that are pending or succeeded: reserved by the refund's insert, released by its failure. */
    refundedUsdCents: integer('refunded_usd_cents').notNull().default(0),
  },
  (t) => [
    unique('payment_intents_merchant_external_unique').on(t.merchantId, t.externalId),
    check('payment_intents_status_check', sql`${t.status} in ('pending', 'settling', 'settled', 'failed', 'expired')`),
    check('payment_intents_amount_check', sql`${t.amountUsdCents} between 100 and 100000000`),
    check('payment_intents_settled_check', sql`(${t.status} = 'settled') = (${t.transactionHash} is not null)`),
    // Two refunds racing for the last cents: the second one's reservation breaks this, whatever the code did.
    check('payment_intents_refunded_check', sql`${t.refundedUsdCents} >= 0 and ${t.refundedUsdCents}::numeric * 10000 <= ${t.receivedAmount}`),
    // The owner's listing pages newest first within a project (ids are time-ordered).
    index('payment_intents_project_idx').on(t.projectId, t.id),
    // The reconciliation worker's queue: small, only intents in flight.
    index('payment_intents_settling_idx').on(t.settlingSince).where(sql`${t.status} = 'settling'`),
    index('payment_intents_pending_expiry_idx').on(t.expiresAt).where(sql`${t.status} = 'pending'`),
  ],
);

/** A payment intent as read: store.ts's statements return it, and the event sink (below the store) takes it. */
export type IntentRow = typeof paymentIntents.$inferSelect;

/**
 * Every EIP-3009 authorization submitted to pay an intent, reserved before anything is broadcast.
 * (payer, nonce) is unique across intents, so one signed authorization can pay at most one intent.
 */
export const paymentIntentAuthorizations = pgTable(
  'payment_intent_authorizations',
  {
    id: uuid('id').primaryKey(),
    intentId: uuid('intent_id').notNull().references(() => paymentIntents.id),
    /** Checksummed payer address and lowercase 0x nonce, as the indexer stores them. */
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    validBefore: bigint('valid_before', { mode: 'number' }).notNull(),
    /** `settling`, `settled`, `failed` (definitive), `unused` (expired without a transfer), `used_elsewhere` (settled before, for another payment). */
    outcome: text('outcome').notNull(),
    /** Hash the facilitator reported while the outcome was unknown, if any. */
    transactionHash: text('transaction_hash'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('payment_intent_authorizations_payer_nonce_unique').on(t.payer, t.nonce),
    index('payment_intent_authorizations_intent_idx').on(t.intentId),
  ],
);

/**
 * The key each project's deposit addresses derive from (deposit-keys.ts): 32 random bytes sealed under the master
 * key like a wallet key, bound to the project. One per project, made on its first deposit address.
 */
export const paymentIntentDepositKeys = pgTable('payment_intent_deposit_keys', {
  projectId: uuid('project_id')
    .primaryKey()
    .references(() => projects.id),
  sealedSeed: text('sealed_seed').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
});

/**
 * An intent's deposit address (docs/intents.md#deposit-addresses): derived from its project's key and the intent
 * id, so never shared by two intents (both unique). `received` and `swept` are the atomic units the watcher has
 * credited and the sweeps have moved on to the merchant's payTo.
 */
export const paymentIntentDeposits = pgTable(
  'payment_intent_deposits',
  {
    intentId: uuid('intent_id')
      .primaryKey()
      .references(() => paymentIntents.id),
    projectId: uuid('project_id').notNull(),
    /** Checksummed. */
    address: text('address').notNull(),
    received: numeric('received', { precision: 78, scale: 0 }).notNull().default('0'),
    swept: numeric('swept', { precision: 78, scale: 0 }).notNull().default('0'),
    /** A failed sweep waits until then before the next try (the facilitator refused, or was unreachable). */
    sweepAfter: timestamp('sweep_after', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('payment_intent_deposits_address_unique').on(t.address),
    // The sweeper's work list: deposits holding more than they passed on.
    index('payment_intent_deposits_unswept_idx').on(t.intentId).where(sql`${t.received} > ${t.swept}`),
  ],
);

/**
 * Every token Transfer into a deposit address, as the deposit watcher read it from a final block. The key is the
 * log itself, so a range read twice (a restart, two leaders for a moment) credits nothing twice.
 */
export const paymentIntentDepositTransfers = pgTable(
  'payment_intent_deposit_transfers',
  {
    network: text('network').notNull(),
    transactionHash: text('transaction_hash').notNull(),
    logIndex: integer('log_index').notNull(),
    intentId: uuid('intent_id')
      .notNull()
      .references(() => paymentIntents.id),
    from: text('from_address').notNull(),
    value: numeric('value', { precision: 78, scale: 0 }).notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockTime: timestamp('block_time', { withTimezone: true }).notNull(),
    /** Mined before the intent's expiresAt (the chain's time): it may count toward settling the intent. */
    onTime: boolean('on_time').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.transactionHash, t.logIndex] }), index('payment_intent_deposit_transfers_intent_idx').on(t.intentId, t.blockNumber)],
);

/** How far the deposit watcher has read each network (the last block whose transfers are credited). */
export const paymentIntentDepositCheckpoints = pgTable('payment_intent_deposit_checkpoints', {
  network: text('network').primaryKey(),
  blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
});

/**
 * Sweeps of a deposit address to the merchant's payTo: an EIP-3009 authorization signed by the deposit key,
 * recorded (nonce, validBefore) before it can leave the process, then settled by our facilitator. At most one is
 * `sending` per deposit (the partial unique index), so the two can never both be in flight; one left `sending` by a
 * crash is decided from the chain (its own AuthorizationUsed + Transfer, or dead past validBefore).
 */
export const paymentIntentSweeps = pgTable(
  'payment_intent_sweeps',
  {
    id: uuid('id').primaryKey(),
    intentId: uuid('intent_id')
      .notNull()
      .references(() => paymentIntents.id),
    from: text('from_address').notNull(),
    payTo: text('pay_to').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    nonce: text('nonce').notNull(),
    validBefore: bigint('valid_before', { mode: 'number' }).notNull(),
    /** `sending`, `settled`, `failed` (nothing moved). */
    status: text('status').notNull(),
    transactionHash: text('transaction_hash'),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    uniqueIndex('payment_intent_sweeps_one_sending').on(t.intentId).where(sql`${t.status} = 'sending'`),
    index('payment_intent_sweeps_intent_idx').on(t.intentId, t.createdAt),
  ],
);

/**
 * Refunds of an intent's payments (refunds.ts), paid from the project's refund wallet to the payer. A refund's
 * cents are reserved on the intent (`refunded_usd_cents`, its CHECK) in the transaction that inserts it, so
 * refunds never add up past what was received, however they race; a failed one gives its cents back.
 */
export const paymentIntentRefunds = pgTable(
  'payment_intent_refunds',
  {
    /** Also the id of the wallet payment that pays it: one signed transfer per refund, whoever sends it. */
    id: uuid('id').primaryKey(),
    intentId: uuid('intent_id')
      .notNull()
      .references(() => paymentIntents.id),
    projectId: uuid('project_id').notNull(),
    amountUsdCents: integer('amount_usd_cents').notNull(),
    /** Who is paid back (checksummed). */
    recipient: text('recipient').notNull(),
    walletId: uuid('wallet_id').notNull(),
    walletCredentialId: uuid('wallet_credential_id').notNull(),
    status: text('status').$type<RefundStatus>().notNull(),
    transactionHash: text('transaction_hash'),
    failureCode: text('failure_code'),
    failureMessage: text('failure_message'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('payment_intent_refunds_amount_check', sql`${t.amountUsdCents} > 0`),
    check('payment_intent_refunds_status_check', sql`${t.status} in ('pending', 'succeeded', 'failed')`),
    index('payment_intent_refunds_intent_idx').on(t.intentId, t.id),
    index('payment_intent_refunds_pending_idx').on(t.createdAt).where(sql`${t.status} = 'pending'`),
  ],
);
