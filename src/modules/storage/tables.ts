import { sql } from 'drizzle-orm';
import { check, index, integer, numeric, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';

export const UPLOAD_STATUSES = ['awaiting_payment', 'payment_pending', 'paid', 'fulfilled', 'expired'] as const;
export type UploadStatus = (typeof UPLOAD_STATUSES)[number];

/**
 * Paid image-storage orders. Exactly-once lives in the constraints: one order per Idempotency-Key
 * (stored as its keyed hash), one order per payment authorization (payer, nonce), one order per transfer
 * (chain_payment_uses, claimed before an order is paid; a settlement batch puts several transfers in one
 * transaction, so the hash is not unique here); every status move is a conditional UPDATE on `status`.
 */
export const uploadOrders = pgTable(
  'upload_orders',
  {
    id: uuid('id').primaryKey(),
    keyHash: text('key_hash').notNull(),
    status: text('status').$type<UploadStatus>().notNull(),
    /** The image the key is bound to: a retry must send the same bytes. */
    fileSha256: text('file_sha256').notNull(),
    fileBytes: integer('file_bytes').notNull(),
    mediaType: text('media_type').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payTo: text('pay_to').notNull(),
    retentionDays: integer('retention_days').notNull(),
    quoteExpiresAt: timestamp('quote_expires_at', { withTimezone: true }).notNull(),
    /** The verified authorization being settled (payment_pending) or that paid the order. */
    payer: text('payer'),
    authorizationNonce: text('authorization_nonce'),
    /** Its validBefore (unix seconds): past it, an unsettled authorization can never move money. */
    authorizationValidBefore: numeric('authorization_valid_before', { precision: 78, scale: 0 }),
    transactionHash: text('transaction_hash'),
    pendingSince: timestamp('pending_since', { withTimezone: true }),
    cid: text('cid'),
    fulfilledAt: timestamp('fulfilled_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('upload_orders_key_hash_unique').on(t.keyHash),
    unique('upload_orders_authorization_unique').on(t.payer, t.authorizationNonce),
    check('upload_orders_status_check', sql`${t.status} in ('awaiting_payment', 'payment_pending', 'paid', 'fulfilled', 'expired')`),
    check('upload_orders_paid_check', sql`(${t.status} in ('paid', 'fulfilled', 'expired')) = (${t.transactionHash} is not null)`),
    check('upload_orders_fulfilled_check', sql`(${t.status} = 'fulfilled') <= (${t.cid} is not null and ${t.expiresAt} is not null)`),
    // The gateway's lookup: which fulfilled order serves a CID.
    index('upload_orders_cid_idx').on(t.cid).where(sql`${t.status} = 'fulfilled'`),
    // The workers' queues: small, only orders in flight or due to expire.
    index('upload_orders_pending_idx').on(t.pendingSince).where(sql`${t.status} = 'payment_pending'`),
    index('upload_orders_expiry_idx').on(t.expiresAt).where(sql`${t.status} = 'fulfilled'`),
  ],
);
