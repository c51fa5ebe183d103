import { and, desc, eq, gt, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../platform/db.js';
import { indexedPayments, indexerBlocks, indexerCheckpoints } from '../../modules/txapi/tables.js';

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

export type NewPayment = Omit<typeof indexedPayments.$inferInsert, 'id' | 'recipientSequence' | 'signature' | 'signer' | 'publishedAt'>;

/** Another indexer moved the checkpoint under us (a lost leader lease): nothing was written. */
export class CheckpointMoved extends Error {
  constructor(chainId: number) {
    super(`indexer checkpoint of chain ${chainId} moved concurrently`);
  }
}

/** The indexer's writes. Every method that moves the checkpoint does so atomically with its rows. */
export class IndexerStore {
  constructor(private readonly db: Db) {}

  async checkpoint(chainId: number): Promise<Checkpoint | null> {
    const [row] = await this.db.select().from(indexerCheckpoints).where(eq(indexerCheckpoints.chainId, chainId));
    return row ? { blockNumber: row.blockNumber, blockHash: row.blockHash } : null;
  }

  /** Stored block hashes, newest first. */
  recentBlocks(chainId: number): Promise<BlockRef[]> {
    return this.db
      .select({ blockNumber: indexerBlocks.blockNumber, blockHash: indexerBlocks.blockHash, parentHash: indexerBlocks.parentHash })
      .from(indexerBlocks)
      .where(eq(indexerBlocks.chainId, chainId))
      .orderBy(desc(indexerBlocks.blockNumber));
  }

  /** Stores a range's payments and block hashes and moves the checkpoint from `previous` to `next`. */
  async commitRange(input: {
    chainId: number;
    previous: Checkpoint | null;
    next: Checkpoint;
    payments: NewPayment[];
    blocks: BlockRef[];
    keepBlocksFrom: number;
    at: Date;
  }): Promise<number> {
    const { chainId } = input;
    return this.db.transaction(async (tx) => {
      await moveCheckpoint(tx, chainId, input.previous, input.next, input.at);
      let inserted = 0;
      if (input.payments.length) {
        // The unique keys make re-indexing a range (after a crash or rollback) a no-op for known rows.
        const rows = await tx.insert(indexedPayments).values(input.payments).onConflictDoNothing().returning({ id: indexedPayments.id });
        inserted = rows.length;
      }
      if (input.blocks.length) {
        await tx
          .insert(indexerBlocks)
          .values(input.blocks.map((b) => ({ chainId, ...b })))
          .onConflictDoUpdate({
            target: [indexerBlocks.chainId, indexerBlocks.blockNumber],
            set: { blockHash: sql`excluded.block_hash`, parentHash: sql`excluded.parent_hash` },
          });
      }
      await tx.delete(indexerBlocks).where(and(eq(indexerBlocks.chainId, chainId), lt(indexerBlocks.blockNumber, input.keepBlocksFrom)));
      return inserted;
    });
  }

  /**
   * Rolls the chain back to `fork`: drops unpublished rows and block hashes above it. Published rows
   * keep their sequence numbers (a reorg deeper than the finality depth); the count is returned so
   * the caller can raise the alarm.
   */
  async rollback(chainId: number, previous: Checkpoint, fork: Checkpoint, at: Date): Promise<{ deleted: number; publishedAbove: number }> {
    return this.db.transaction(async (tx) => {
      await moveCheckpoint(tx, chainId, previous, fork, at);
      const above = and(eq(indexedPayments.chainId, chainId), gt(indexedPayments.blockNumber, fork.blockNumber));
      const deleted = await tx.delete(indexedPayments).where(and(above, isNull(indexedPayments.recipientSequence))).returning({ id: indexedPayments.id });
      const [kept] = await tx
        .select({ n: sql<number>`count(*)::int` })
        .from(indexedPayments)
        .where(and(above, isNotNull(indexedPayments.recipientSequence)));
      await tx.delete(indexerBlocks).where(and(eq(indexerBlocks.chainId, chainId), gt(indexerBlocks.blockNumber, fork.blockNumber)));
      return { deleted: deleted.length, publishedAbove: kept?.n ?? 0 };
    });
  }
}

/** Compare-and-set on the checkpoint, so two indexers can never interleave their ranges. */
async function moveCheckpoint(tx: Executor, chainId: number, previous: Checkpoint | null, next: Checkpoint, at: Date) {
  const values = { blockNumber: next.blockNumber, blockHash: next.blockHash, updatedAt: at };
  const moved = previous
    ? await tx
        .update(indexerCheckpoints)
        .set(values)
        .where(
          and(
            eq(indexerCheckpoints.chainId, chainId),
            eq(indexerCheckpoints.blockNumber, previous.blockNumber),
            sql`${indexerCheckpoints.blockHash} is not distinct from ${previous.blockHash}`,
          ),
        )
        .returning({ chainId: indexerCheckpoints.chainId })
    : await tx.insert(indexerCheckpoints).values({ chainId, ...values }).onConflictDoNothing().returning({ chainId: indexerCheckpoints.chainId });
  if (moved.length !== 1) throw new CheckpointMoved(chainId);
}
