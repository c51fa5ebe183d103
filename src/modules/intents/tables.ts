import { sql } from 'drizzle-orm';
import { bigint, check, index, integer, numeric, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { merchants, projects } from '../projects/tables.js';
import { guardedJsonb } from '../../platform/db-types.js';

export const INTENT_STATUSES = ['pending', 'settling', 'settled', 'failed', 'expired'] as const;
export type IntentStatus = (typeof INTENT_STATUSES)[number];

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
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    settledAt: timestamp('settled_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** Where the settled checkout links back to (https, or loopback http on the devchain); never redirected to. */
    returnUrl: text('return_url'),
  },
  (t) => [
    unique('payment_intents_merchant_external_unique').on(t.merchantId, t.externalId),
    check('payment_intents_status_check', sql`${t.status} in ('pending', 'settling', 'settled', 'failed', 'expired')`),
    check('payment_intents_amount_check', sql`${t.amountUsdCents} between 100 and 100000000`),
    check('payment_intents_settled_check', sql`(${t.status} = 'settled') = (${t.transactionHash} is not null)`),
    // The owner's listing pages newest first within a project (ids are time-ordered).
    index('payment_intents_project_idx').on(t.projectId, t.id),
    // The reconciliation worker's queue: small, only intents in flight.
    index('payment_intents_settling_idx').on(t.settlingSince).where(sql`${t.status} = 'settling'`),
    index('payment_intents_pending_expiry_idx').on(t.expiresAt).where(sql`${t.status} = 'pending'`),
  ],
);

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
