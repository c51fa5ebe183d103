import { sql } from 'drizzle-orm';
import { bigint, check, index, numeric, pgTable, text, timestamp, unique, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

/**
 * The credits ledger, double-entry: every movement is one transfer row naming the account it leaves and
 * the account it enters, so debits and credits always balance. Accounts are `user:<sub>` or a system account
 * (`system:grants`, `system:top-ups`, `system:agents`); an account's balance is Σ in − Σ out.
 *
 * A user account's balance is also kept in `credit_balances`, moved by the same statement that writes
 * the transfer, and the database refuses it below zero (CHECK): concurrent spends serialize on the row and
 * the one that would overdraw matches nothing. Each cause but a renewal can move money once (unique per agent, top-up,
 * refunded transfer).
 */
export const TRANSFER_CAUSES = ['grant', 'top_up', 'agent_purchase', 'agent_renewal', 'refund'] as const;
export type TransferCause = (typeof TRANSFER_CAUSES)[number];

export const creditBalances = pgTable(
  'credit_balances',
  {
    userId: text('user_id').primaryKey(),
    balanceCents: bigint('balance_cents', { mode: 'number' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [check('credit_balances_non_negative', sql`${t.balanceCents} >= 0`)],
);

export const creditTransfers = pgTable(
  'credit_transfers',
  {
    id: uuid('id').primaryKey(),
    fromAccount: text('from_account').notNull(),
    toAccount: text('to_account').notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    cause: text('cause').$type<TransferCause>().notNull(),
    /** What caused it, by cause: the agent bought, the top-up paid, the transfer refunded; a grant's note and operator. */
    agentId: uuid('agent_id'),
    topUpId: uuid('top_up_id'),
    refundOf: uuid('refund_of'),
    note: text('note'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    check('credit_transfers_amount_positive', sql`${t.amountCents} > 0`),
    check('credit_transfers_two_sides', sql`${t.fromAccount} <> ${t.toAccount}`),
    check('credit_transfers_cause_check', sql`${t.cause} in ('grant', 'top_up', 'agent_purchase', 'agent_renewal', 'refund')`),
    check(
      'credit_transfers_traceable',
      sql`case ${t.cause} when 'agent_purchase' then ${t.agentId} is not null when 'agent_renewal' then ${t.agentId} is not null when 'top_up' then ${t.topUpId} is not null when 'refund' then ${t.refundOf} is not null else ${t.note} is not null end`,
    ),
    uniqueIndex('credit_transfers_agent_purchase_unique').on(t.agentId).where(sql`${t.cause} = 'agent_purchase'`),
    unique('credit_transfers_top_up_unique').on(t.topUpId),
    unique('credit_transfers_refund_unique').on(t.refundOf),
    index('credit_transfers_to_idx').on(t.toAccount, t.createdAt),
    index('credit_transfers_from_idx').on(t.fromAccount, t.createdAt),
  ],
);

export const TOP_UP_STATUSES = ['settling', 'settled', 'failed'] as const;
export type TopUpStatus = (typeof TOP_UP_STATUSES)[number];

/**
 * Credit top-ups paid through x402. One row per payment authorization (network, asset, payer, nonce): it is
 * claimed `settling` before the settle, so a crash or an unknown outcome leaves a row reconcile resolves.
 * One top-up per transfer is chain_payment_uses' rule (a settlement batch puts several transfers in one
 * transaction, so the hash is not unique here).
 */
export const creditTopUps = pgTable(
  'credit_top_ups',
  {
    id: uuid('id').primaryKey(),
    userId: text('user_id').notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    status: text('status').$type<TopUpStatus>().notNull(),
    network: text('network').notNull(),
    asset: text('asset').notNull(),
    payTo: text('pay_to').notNull(),
    amountAtomic: numeric('amount_atomic', { precision: 78, scale: 0 }).notNull(),
    payer: text('payer').notNull(),
    nonce: text('nonce').notNull(),
    validBefore: numeric('valid_before', { precision: 78, scale: 0 }).notNull(),
    transactionHash: text('transaction_hash'),
    failure: text('failure'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    unique('credit_top_ups_authorization_unique').on(t.network, t.asset, t.payer, t.nonce),
    check('credit_top_ups_status_check', sql`${t.status} in ('settling', 'settled', 'failed')`),
    check('credit_top_ups_settled_check', sql`(${t.status} = 'settled') = (${t.transactionHash} is not null)`),
    check('credit_top_ups_amount_positive', sql`${t.amountCents} > 0`),
    index('credit_top_ups_settling_idx').on(t.updatedAt).where(sql`${t.status} = 'settling'`),
    index('credit_top_ups_user_idx').on(t.userId, t.createdAt),
  ],
);
