import type { Address } from 'viem';

// The indexer's port to whoever keeps the index (the txapi module, which owns the tables). The chain
// layer computes what happened on chain; the sink stores it. Each write is one transaction that also
// moves the checkpoint, so rows and checkpoint can never disagree.

export interface Checkpoint {
  blockNumber: number;
  /** Null only for the virtual block before the start block, which nothing can reorg. */
  blockHash: string | null;
}

export interface BlockRef {
  blockNumber: number;
  blockHash: string;
  parentHash: string;
}

/**
 * One EIP-3009 payment found on chain: a `Transfer` paired with its `AuthorizationUsed` in a
 * transaction one of our facilitator signers sent. Addresses checksummed, hashes and nonces lowercase.
 */
export interface IndexedPaymentFact {
  chainId: number;
  token: Address;
  /** keccak256(abi.encode(chainId, token, authorizer, nonce)): the consumption key. */
  paymentId: string;
  payer: Address;
  recipient: Address;
  /** Atomic units, decimal string. */
  value: string;
  authorizationNonce: string;
  transactionHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
  blockTimestamp: number;
  /** The signer that sent the transaction (tx.from). */
  facilitator: Address;
  indexedAt: Date;
}

/** A range of blocks read: its payments, the hashes of its blocks inside the reorg window, the checkpoint move. */
export interface IndexBatch {
  chainId: number;
  /** The checkpoint the batch was read from (compare-and-set); null before the first batch. */
  previous: Checkpoint | null;
  next: Checkpoint;
  payments: IndexedPaymentFact[];
  blocks: BlockRef[];
  /** Block hashes below this number are no longer needed to find a fork point. */
  keepBlocksFrom: number;
  at: Date;
}

export interface IndexRollback {
  chainId: number;
  /** The checkpoint found not canonical (compare-and-set). */
  previous: Checkpoint;
  /** The last block still on the chain: everything above it goes. */
  fork: Checkpoint;
  at: Date;
}

export interface IndexerSink {
  checkpoint(chainId: number): Promise<Checkpoint | null>;
  /** Stored block hashes (the reorg window), newest first. */
  recentBlocks(chainId: number): Promise<BlockRef[]>;
  /**
   * In one transaction: moves the checkpoint from `previous` to `next` (throwing CheckpointMoved and
   * writing nothing if another indexer moved it), stores the payments (a payment already stored is a
   * no-op, so re-reading a range is harmless) and the block hashes, and prunes hashes below
   * `keepBlocksFrom`. Returns how many payments were new.
   */
  apply(batch: IndexBatch): Promise<number>;
  /**
   * In one transaction: moves the checkpoint back to `fork` (compare-and-set as above), drops the
   * payments not yet published and the block hashes above it. Published payments above the fork are
   * kept and counted (a reorg deeper than the finality depth) so the indexer can raise the alarm.
   */
  rollback(input: IndexRollback): Promise<{ deleted: number; publishedAbove: number }>;
}

/** Another indexer moved the checkpoint under us (a lost leader lease): nothing was written. */
export class CheckpointMoved extends Error {
  constructor(chainId: number) {
    super(`indexer checkpoint of chain ${chainId} moved concurrently`);
  }
}
