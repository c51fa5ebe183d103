import { and, desc, eq, gt, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import {
  CheckpointMoved,
  type BlockRef,
  type Checkpoint,
  type IndexBatch,
  type IndexerSink,
  type IndexRollback,
} from '../../chain/indexer/sink.js';
import type { Db, Executor } from '../../platform/db.js';
import { indexedPayments, indexerBlocks, indexerCheckpoints } from './tables.js';

/**
 * The chain indexer's sink over this module's tables: every method that moves the checkpoint does so
 * atomically with its rows (see IndexerSink). The indexer itself never touches these tables.
 */
export class PaymentIndexStore implements IndexerSink {
  constructor(private readonly db: Db) {}

  async checkpoint(chainId: number): Promise<Checkpoint | null> {
    const [row] = await this.db.select().from(indexerCheckpoints).where(eq(indexerCheckpoints.chainId, chainId));
    return row ? { blockNumber: row.blockNumber, blockHash: row.blockHash } : null;
  }

  recentBlocks(chainId: number): Promise<BlockRef[]> {
    return this.db
      .select({ blockNumber: indexerBlocks.blockNumber, blockHash: indexerBlocks.blockHash, parentHash: indexerBlocks.parentHash })
      .from(indexerBlocks)
      .where(eq(indexerBlocks.chainId, chainId))
      .orderBy(desc(indexerBlocks.blockNumber));
  }

  async apply(batch: IndexBatch): Promise<number> {
    const { chainId } = batch;
    return this.db.transaction(async (tx) => {
      await moveCheckpoint(tx, chainId, batch.previous, batch.next, batch.at);
      let inserted = 0;
      if (batch.payments.length) {
        // The unique keys make re-indexing a range (after a crash or rollback) a no-op for known rows.
        const rows = await tx.insert(indexedPayments).values(batch.payments).onConflictDoNothing().returning({ id: indexedPayments.id });
        inserted = rows.length;
      }
      if (batch.blocks.length) {
        await tx
          .insert(indexerBlocks)
          .values(batch.blocks.map((b) => ({ chainId, ...b })))
          .onConflictDoUpdate({
            target: [indexerBlocks.chainId, indexerBlocks.blockNumber],
            set: { blockHash: sql`excluded.block_hash`, parentHash: sql`excluded.parent_hash` },
          });
      }
      await tx.delete(indexerBlocks).where(and(eq(indexerBlocks.chainId, chainId), lt(indexerBlocks.blockNumber, batch.keepBlocksFrom)));
      return inserted;
    });
  }

  async rollback({ chainId, previous, fork, at }: IndexRollback): Promise<{ deleted: number; publishedAbove: number }> {
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
