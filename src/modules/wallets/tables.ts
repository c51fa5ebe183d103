import { sql } from 'drizzle-orm';
import { index, integer, numeric, pgTable, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { guardedJsonb } from '../../platform/db-types.js';

// Tables of the Wallet API. The owning management credential is kept without a foreign key: the
// platform owns that table, and a module must not depend on another owner's schema.

/**
 * Wallets. `owner_credential_id` is the management credential that created the wallet: the
 * "application" boundary (a credential sees only its own wallets). `key_ref` is the provider's
 * handle on the key (for the local keystore, the AES-256-GCM sealed key); never returned.
 */
export const wallets = pgTable(
  'wallets',
  {
    id: uuid('id').primaryKey(),
    ownerCredentialId: uuid('owner_credential_id').notNull(),
    externalId: text('external_id').notNull(),
    name: text('name').notNull(),
    provider: text('provider').notNull(),
    chainType: text('chain_type').notNull(),
    /** `provisioning`, `active` or `failed`. */
    status: text('status').notNull(),
    address: text('address'),
    keyRef: text('key_ref'),
    metadata: guardedJsonb('metadata').$type<Record<string, string | number | boolean>>(),
    lastError: text('last_error'),
    provisionAttempts: integer('provision_attempts').notNull().default(0),
    /** When the provisioning worker may (re)try; also a claim lease while an attempt runs. */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('wallets_owner_external_unique').on(t.ownerCredentialId, t.externalId),
    index('wallets_owner_idx').on(t.ownerCredentialId, t.createdAt),
    index('wallets_provisioning_idx').on(t.nextAttemptAt).where(sql`${t.status} <> 'active'`),
  ],
);

/** Wallet credentials (`svc_wallet_`): each resolves to exactly one wallet. Only a keyed hash is kept. */
export const walletCredentials = pgTable(
  'wallet_credentials',
  {
    id: uuid('id').primaryKey(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    secretHash: text('secret_hash').notNull().unique(),
    /** `active` or `revoked`. */
    status: text('status').notNull(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('wallet_credentials_wallet_idx').on(t.walletId, t.createdAt)],
);

/**
 * Payments signed by pay-and-call, one row per signed authorization (the EIP-3009 nonce is unique
 * per wallet, so a signature is recorded exactly once).
 */
export const walletPayments = pgTable(
  'wallet_payments',
  {
    id: uuid('id').primaryKey(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    credentialId: uuid('credential_id')
      .notNull()
      .references(() => walletCredentials.id),
    /** `pending`, `settled`, `failed` or `unknown`. */
    status: text('status').notNull(),
    x402Version: integer('x402_version').notNull(),
    scheme: text('scheme').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    payTo: text('pay_to').notNull(),
    nonce: text('nonce').notNull(),
    /** The authorization's validBefore (unix seconds); null on rows signed before it was recorded. */
    validBefore: numeric('valid_before', { precision: 78, scale: 0 }),
    /** Upstream resource: method plus origin and path (the query string may carry secrets). */
    method: text('method').notNull(),
    resource: text('resource').notNull(),
    upstreamStatus: integer('upstream_status'),
    transaction: text('transaction'),
    settlement: guardedJsonb('settlement').$type<Record<string, unknown>>(),
    error: text('error'),
    /** The id of the request that asked for it (the caller's X-Request-Id when it sent one); null before it was recorded. */
    requestId: text('request_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('wallet_payments_wallet_nonce_unique').on(t.walletId, t.nonce),
    index('wallet_payments_wallet_idx').on(t.walletId, t.id),
    // A spend policy's rolling windows: a wallet's payments by time.
    index('wallet_payments_window_idx').on(t.walletId, t.createdAt),
    // A credential's ceiling (an OAuth grant's: spend-guard.ts): what its payments add up to.
    index('wallet_payments_credential_idx').on(t.credentialId),
    // The reconciler's work list: open payments only, oldest first.
    index('wallet_payments_open_idx').on(t.network, t.createdAt, t.id).where(sql`${t.status} in ('pending', 'unknown')`),
  ],
);

/**
 * A wallet's spend policy (policy.ts), one row per wallet; no row = no rules. The row is also the lock that
 * orders a wallet's reservations: spend-guard.ts takes it FOR UPDATE before counting the window and
 * recording the payment, so concurrent calls on any node see each other's reservations.
 */
export const walletPolicies = pgTable('wallet_policies', {
  walletId: uuid('wallet_id')
    .primaryKey()
    .references(() => wallets.id),
  policy: guardedJsonb('policy').$type<Record<string, unknown>>().notNull(),
  /** The management credential that last set it. */
  updatedBy: uuid('updated_by').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
});

/**
 * Human approvals of payments above a policy's `approvalAbove`. `status` is the decision (`pending`,
 * `approved`, `denied`, `consumed`); past `expires_at` (the database's clock) a pending or approved one
 * counts as expired. An approved one is consumed once, by the payment named in `payment_id`.
 */
export const walletApprovals = pgTable(
  'wallet_approvals',
  {
    id: uuid('id').primaryKey(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    status: text('status').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    amount: numeric('amount', { precision: 78, scale: 0 }).notNull(),
    payTo: text('pay_to').notNull(),
    method: text('method').notNull(),
    url: text('url').notNull(),
    /** The wallet credential whose call asked for it. */
    requestedBy: uuid('requested_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** The management credential that approved or denied it, and when. */
    decidedBy: uuid('decided_by'),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
    paymentId: uuid('payment_id'),
    consumedAt: timestamp('consumed_at', { withTimezone: true }),
  },
  (t) => [index('wallet_approvals_wallet_idx').on(t.walletId, t.id)],
);

/**
 * Where a wallet's approval requests are published (policy-service.ts): one event queue of a project, picked by
 * whoever owns the wallet after proving the queue is theirs to write into. No row: none are published.
 */
export const walletApprovalQueues = pgTable('wallet_approval_queues', {
  walletId: uuid('wallet_id')
    .primaryKey()
    .references(() => wallets.id),
  projectId: uuid('project_id').notNull(),
  queueId: uuid('queue_id').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
});

/**
 * A wallet's x402 batch-settlement channels (channel-store.ts): one row per on-chain channel id (the payer, the
 * seller's receiver and authorizer, the token, the withdrawal delay and the salt hash to it). The row is the
 * official client's ClientChannelStorage record, so a restart keeps the cumulative amount the seller charged, and
 * its lease is what serialises the channel's vouchers: a voucher is signed only by the holder of a live lease
 * (database time), so two calls never sign on one base. `url` is the seller's resource the channel was opened at:
 * where deposits and the cooperative refund go.
 */
export const walletChannels = pgTable(
  'wallet_channels',
  {
    id: uuid('id').primaryKey(),
    walletId: uuid('wallet_id')
      .notNull()
      .references(() => wallets.id),
    channelId: text('channel_id').notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payee: text('payee').notNull(),
    receiverAuthorizer: text('receiver_authorizer').notNull(),
    withdrawDelay: integer('withdraw_delay').notNull(),
    salt: text('salt').notNull(),
    url: text('url').notNull(),
    /** `open` or `closed` (refunded). */
    status: text('status').notNull(),
    /** What the wallet deposited and the channel holds (the client's `balance`); null before the first deposit is confirmed. */
    balance: numeric('balance', { precision: 78, scale: 0 }),
    /** The cumulative amount the seller confirmed charging (the base of the next voucher). */
    chargedCumulative: numeric('charged_cumulative', { precision: 78, scale: 0 }).notNull().default('0'),
    /** The highest cumulative amount the wallet ever signed on this channel: the most the seller can claim. */
    signedMax: numeric('signed_max', { precision: 78, scale: 0 }).notNull().default('0'),
    /** The client's recovery fields (totalClaimed, signedMaxClaimable, signature of a corrective 402). */
    context: guardedJsonb('context').$type<Record<string, string>>(),
    leaseId: uuid('lease_id'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [unique('wallet_channels_wallet_channel_unique').on(t.walletId, t.channelId), index('wallet_channels_wallet_idx').on(t.walletId, t.id)],
);
