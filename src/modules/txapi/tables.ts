import { sql } from 'drizzle-orm';
import { bigint, index, integer, numeric, pgTable, primaryKey, text, timestamp, unique } from 'drizzle-orm/pg-core';

// Tables of the chain indexer (src/chain/indexer) and the transaction API. Addresses are stored
// checksummed (EIP-55), hashes and nonces lowercase hex, so equality needs no lower().

/**
 * One row per EIP-3009 payment settled by our facilitator: a `Transfer` paired with the
 * `AuthorizationUsed` before it in the same transaction. Rows above the finality depth may be
 * deleted by a reorg; `recipient_sequence` (with the signature) is set once the block is final and
 * never changes after that.
 */
export const indexedPayments = pgTable(
  'indexed_payments',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    chainId: integer('chain_id').notNull(),
    token: text('token').notNull(),
    /** keccak256(abi.encode(chainId, token, authorizer, nonce)): the consumption key. */
    paymentId: text('payment_id').notNull(),
    payer: text('payer').notNull(),
    recipient: text('recipient').notNull(),
    value: numeric('value', { precision: 78, scale: 0 }).notNull(),
    authorizationNonce: text('authorization_nonce').notNull(),
    transactionHash: text('transaction_hash').notNull(),
    logIndex: integer('log_index').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    blockTimestamp: bigint('block_timestamp', { mode: 'number' }).notNull(),
    /** The relayer that sent the transaction (tx.from). */
    facilitator: text('facilitator').notNull(),
    indexedAt: timestamp('indexed_at', { withTimezone: true }).notNull(),
    recipientSequence: bigint('recipient_sequence', { mode: 'number' }),
    signature: text('signature'),
    signer: text('signer'),
    publishedAt: timestamp('published_at', { withTimezone: true }),
  },
  (t) => [
    unique('indexed_payments_log_unique').on(t.chainId, t.transactionHash, t.logIndex),
    unique('indexed_payments_payment_id_unique').on(t.paymentId),
    // The cursor read and "newest first" for one recipient walk this index, forwards or backwards.
    unique('indexed_payments_recipient_sequence_unique').on(t.chainId, t.recipient, t.recipientSequence),
    // Rollback (block_number > fork) and listing one chain newest first.
    index('indexed_payments_chain_block_idx').on(t.chainId, t.blockNumber, t.logIndex),
    // Rows waiting for finality: small, scanned by the publisher every tick.
    index('indexed_payments_unpublished_idx')
      .on(t.chainId, t.blockNumber, t.logIndex)
      .where(sql`${t.recipientSequence} is null`),
    index('indexed_payments_authorization_idx').on(t.chainId, t.token, t.payer, t.authorizationNonce),
    index('indexed_payments_tx_idx').on(t.transactionHash),
    // Listings across chains (chain=all), with and without a recipient.
    index('indexed_payments_recipient_time_idx').on(t.recipient, t.blockTimestamp, t.chainId, t.blockNumber, t.logIndex),
    index('indexed_payments_time_idx').on(t.blockTimestamp, t.chainId, t.blockNumber, t.logIndex),
  ],
);

/** Last block fully indexed per chain; moved forward in the same transaction as the rows it covers. */
export const indexerCheckpoints = pgTable('indexer_checkpoints', {
  chainId: integer('chain_id').primaryKey(),
  blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
  blockHash: text('block_hash'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
});

/** Hashes of the most recent indexed blocks (the reorg window), to find the fork point. */
export const indexerBlocks = pgTable(
  'indexer_blocks',
  {
    chainId: integer('chain_id').notNull(),
    blockNumber: bigint('block_number', { mode: 'number' }).notNull(),
    blockHash: text('block_hash').notNull(),
    parentHash: text('parent_hash').notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.blockNumber] })],
);

/**
 * Last recipientSequence handed out per (chain, recipient). Incremented with UPDATE ... RETURNING
 * in the transaction that publishes the record, so the row lock serializes publishers and a
 * rolled-back publish leaves no gap.
 */
export const recipientSequences = pgTable(
  'recipient_sequences',
  {
    chainId: integer('chain_id').notNull(),
    recipient: text('recipient').notNull(),
    lastSequence: bigint('last_sequence', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.recipient] })],
);
