import { and, asc, eq, isNull, lte, sql } from 'drizzle-orm';
import type { Address, Hex } from 'viem';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { AttestationSigner } from './attestation.js';
import { indexedPayments, recipientSequences } from './tables.js';

/**
 * Publishes final rows: gives each the next recipientSequence of its (chain, recipient) and stores
 * the attestation signature, all in one transaction. Rows go out in block/log order, so sequences
 * follow chain order; a failed publish rolls the counter back with it, so numbers stay contiguous.
 */
export class Publisher {
  constructor(
    private readonly db: Db,
    private readonly signer: AttestationSigner,
    private readonly clock: Clock,
    // Small batches: on PGlite the transaction holds the only connection while it signs.
    private readonly batchSize = 100,
  ) {}

  /** Publishes up to one batch of unpublished rows at or below `finalizedThrough`; returns how many. */
  async publish(chainId: number, finalizedThrough: number): Promise<number> {
    if (finalizedThrough < 0) return 0;
    return this.db.transaction(async (tx) => {
      // One publisher per chain at a time: numbers then follow chain order, and two publishers can
      // never lock the counters of two recipients in opposite orders (a deadlock).
      await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`tollgate:txapi:publish:${chainId}`}, 0))`);
      const rows = await tx
        .select()
        .from(indexedPayments)
        .where(
          and(
            eq(indexedPayments.chainId, chainId),
            isNull(indexedPayments.recipientSequence),
            lte(indexedPayments.blockNumber, finalizedThrough),
          ),
        )
        .orderBy(asc(indexedPayments.blockNumber), asc(indexedPayments.logIndex))
        .limit(this.batchSize)
        .for('update'); // a concurrent rollback waits, then sees the row published and keeps it
      const at = this.clock.now();
      for (const row of rows) {
        // The counter row's lock serializes every publisher of this recipient until commit.
        const [counter] = await tx
          .insert(recipientSequences)
          .values({ chainId, recipient: row.recipient, lastSequence: 1 })
          .onConflictDoUpdate({
            target: [recipientSequences.chainId, recipientSequences.recipient],
            set: { lastSequence: sql`${recipientSequences.lastSequence} + 1` },
          })
          .returning({ sequence: recipientSequences.lastSequence });
        const signature = await this.signer.sign(chainId, {
          paymentId: row.paymentId as Hex,
          payer: row.payer as Address,
          recipient: row.recipient as Address,
          recipientSequence: BigInt(counter.sequence),
          token: row.token as Address,
          amount: BigInt(row.value),
        });
        const updated = await tx
          .update(indexedPayments)
          .set({ recipientSequence: counter.sequence, signature, signer: this.signer.address, publishedAt: at })
          .where(and(eq(indexedPayments.id, row.id), isNull(indexedPayments.recipientSequence)))
          .returning({ id: indexedPayments.id });
        // Never leave a counted number without its record: abort the whole batch instead.
        if (updated.length !== 1) throw new Error(`indexed payment ${row.id} changed while publishing`);
      }
      return rows.length;
    });
  }
}
