// The settlement ledger's queries. Every state change is a conditional update on the open states,
// so a settle, its retries and the reconciler can race and still agree on one final row.
import { and, asc, eq, inArray, isNull, lt } from 'drizzle-orm';
import type { SettleResponse } from '@x402/core/types';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { x402Settlements, type SettlementRow } from '../tables.js';

export interface SettlementKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

export type NewSettlement = Omit<
  SettlementRow,
  'status' | 'claimedAt' | 'txHash' | 'errorReason' | 'errorMessage' | 'response' | 'createdAt' | 'updatedAt' | 'finishedAt'
>;

export interface Outcome {
  status: 'settled' | 'failed';
  response: SettleResponse;
}

const OPEN = ['claimed', 'broadcast'];

const byKey = (key: SettlementKey) =>
  and(
    eq(x402Settlements.network, key.network),
    eq(x402Settlements.asset, key.asset),
    eq(x402Settlements.payer, key.payer),
    eq(x402Settlements.nonce, key.nonce),
  );

export const keyOf = (row: SettlementKey): SettlementKey => ({
  network: row.network,
  asset: row.asset,
  payer: row.payer,
  nonce: row.nonce,
});

export const keyString = (key: SettlementKey) => `${key.network}|${key.asset}|${key.payer}|${key.nonce}`;

export class SettlementLedger {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async find(key: SettlementKey): Promise<SettlementRow | null> {
    const rows = await this.db.select().from(x402Settlements).where(byKey(key)).limit(1);
    return rows[0] ?? null;
  }

  /** Inserts a claimed row; when the key exists already, returns that row instead. */
  async claim(row: NewSettlement): Promise<{ claimed: boolean; row: SettlementRow }> {
    const now = this.clock.now();
    const inserted = await this.db
      .insert(x402Settlements)
      .values({ ...row, status: 'claimed', claimedAt: now, createdAt: now, updatedAt: now })
      .onConflictDoNothing()
      .returning();
    if (inserted[0]) return { claimed: true, row: inserted[0] };
    const existing = await this.find(row);
    if (!existing) throw new Error('settlement row vanished during claim');
    return { claimed: false, row: existing };
  }

  /** The relayer sent the transaction: from here on the row is only ever resolved from the chain. */
  async recordBroadcast(key: SettlementKey, txHash: string): Promise<void> {
    await this.db
      .update(x402Settlements)
      .set({ status: 'broadcast', txHash, updatedAt: this.clock.now() })
      .where(and(byKey(key), inArray(x402Settlements.status, OPEN)));
  }

  /** Writes the final outcome once; returns the row as finally stored (possibly someone else's outcome). */
  async finish(key: SettlementKey, outcome: Outcome): Promise<SettlementRow> {
    const now = this.clock.now();
    const { response } = outcome;
    const updated = await this.db
      .update(x402Settlements)
      .set({
        status: outcome.status,
        txHash: response.transaction || null,
        errorReason: response.errorReason ?? null,
        errorMessage: response.errorMessage ?? null,
        response,
        updatedAt: now,
        finishedAt: now,
      })
      .where(and(byKey(key), inArray(x402Settlements.status, OPEN)))
      .returning();
    if (updated[0]) return updated[0];
    const row = await this.find(key);
    if (!row) throw new Error('settlement row vanished before finish');
    return row;
  }

  /** Drops a claim that provably broadcast nothing, so a retry starts clean. */
  async release(key: SettlementKey, claimToken: string): Promise<void> {
    await this.db
      .delete(x402Settlements)
      .where(
        and(
          byKey(key),
          eq(x402Settlements.claimToken, claimToken),
          eq(x402Settlements.status, 'claimed'),
          isNull(x402Settlements.txHash),
        ),
      );
  }

  /** Open rows untouched since `before`, oldest first: the reconciler's work list. */
  async listOpen(before: Date, limit: number): Promise<SettlementRow[]> {
    return this.db
      .select()
      .from(x402Settlements)
      .where(and(inArray(x402Settlements.status, OPEN), lt(x402Settlements.updatedAt, before)))
      .orderBy(asc(x402Settlements.updatedAt))
      .limit(limit);
  }

  /** Marks a row as looked at, so the reconciler moves on to others. */
  async touch(key: SettlementKey): Promise<void> {
    await this.db
      .update(x402Settlements)
      .set({ updatedAt: this.clock.now() })
      .where(and(byKey(key), inArray(x402Settlements.status, OPEN)));
  }

  async pendingTxBySignature(signature: string): Promise<string | undefined> {
    const rows = await this.db
      .select({ txHash: x402Settlements.txHash })
      .from(x402Settlements)
      .where(and(eq(x402Settlements.signature, signature), eq(x402Settlements.status, 'broadcast')))
      .limit(1);
    return rows[0]?.txHash ?? undefined;
  }

  async recordBroadcastBySignature(signature: string, txHash: string): Promise<void> {
    await this.db
      .update(x402Settlements)
      .set({ status: 'broadcast', txHash, updatedAt: this.clock.now() })
      .where(and(eq(x402Settlements.signature, signature), inArray(x402Settlements.status, OPEN)));
  }
}
