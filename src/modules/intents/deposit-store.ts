import { and, asc, eq, inArray, isNull, lt, lte, or, sql } from 'drizzle-orm';
import type { Address } from 'viem';
import type { WatchedTransfer } from '../../chain/indexer/deposits.js';
import { databaseNow, type Clock } from '../../platform/clock.js';
import type { Db, Executor } from '../../platform/db.js';
import { rowsOf, toDate, type Timestamp } from '../../platform/sql-rows.js';
import type { IntentEventSink } from './event-sink.js';
import { noIntentOutcomes, type IntentOutcomes } from './metrics.js';
import { movingIntents } from './store.js';
import {
  paymentIntentDepositCheckpoints as checkpoints,
  paymentIntentDepositKeys as depositKeys,
  paymentIntentDeposits as deposits,
  paymentIntentDepositTransfers as transfers,
  paymentIntents as intents,
  paymentIntentSweeps as sweeps,
  type IntentRow,
} from './tables.js';

export type DepositRow = typeof deposits.$inferSelect;
export type DepositTransferRow = typeof transfers.$inferSelect;
export type SweepRow = typeof sweeps.$inferSelect;

/**
 * SQL of deposit addresses, the transfers into them and their sweeps (docs/intents.md#deposit-addresses).
 * Concurrency, stated once:
 * - a transfer is credited by the INSERT of its log's row (network, transaction, log index); its amounts are added
 *   in the same transaction only when that insert inserted, so a range read twice credits nothing twice;
 * - an intent settles from its deposits by one conditional UPDATE `where status = 'pending'`, with its event, in
 *   the transaction that found it funded: an x402 payment claiming it meanwhile (pending → settling) wins or loses
 *   that race whole, and a deposit that arrives while it is settling is re-examined once it is pending again;
 * - one sweep per deposit is `sending` at a time (a partial unique index), and a sweep's outcome moves it out of
 *   `sending` by a conditional UPDATE that also counts what it swept, once.
 */
export class DepositStore {
  constructor(
    private readonly db: Db,
    private readonly network: string,
    private readonly clock: Clock,
    private readonly events: IntentEventSink,
    private readonly outcome: IntentOutcomes = noIntentOutcomes,
  ) {}

  async sealedSeed(projectId: string): Promise<string | undefined> {
    const [row] = await this.db.select({ sealedSeed: depositKeys.sealedSeed }).from(depositKeys).where(eq(depositKeys.projectId, projectId));
    return row?.sealedSeed;
  }

  /** Stores the project's sealed seed unless one is there already; the one that stays. */
  async keepSeed(projectId: string, sealedSeed: string, now: Date): Promise<string> {
    await this.db.insert(depositKeys).values({ projectId, sealedSeed, createdAt: now }).onConflictDoNothing();
    return (await this.sealedSeed(projectId))!;
  }

  async deposit(intentId: string): Promise<DepositRow | undefined> {
    const [row] = await this.db.select().from(deposits).where(eq(deposits.intentId, intentId));
    return row;
  }

  /** Records the intent's address (the same one whoever derives it first); the row that stays. */
  async keepDeposit(row: Pick<DepositRow, 'intentId' | 'projectId' | 'address'>, now: Date): Promise<DepositRow> {
    await this.db.insert(deposits).values({ ...row, createdAt: now }).onConflictDoNothing({ target: deposits.intentId });
    return (await this.deposit(row.intentId))!;
  }

  async transfersOf(intentId: string): Promise<DepositTransferRow[]> {
    return this.db.select().from(transfers).where(eq(transfers.intentId, intentId)).orderBy(asc(transfers.blockNumber), asc(transfers.logIndex));
  }

  // ---- the watcher's sink --------------------------------------------------------------------------------

  async checkpoint(): Promise<number | null> {
    const [row] = await this.db.select({ blockNumber: checkpoints.blockNumber }).from(checkpoints).where(eq(checkpoints.network, this.network));
    return row?.blockNumber ?? null;
  }

  async watched(addresses: readonly Address[]): Promise<ReadonlySet<string>> {
    if (addresses.length === 0) return new Set();
    const rows = await this.db.select({ address: deposits.address }).from(deposits).where(inArray(deposits.address, [...addresses]));
    return new Set(rows.map((row) => row.address));
  }

  /**
   * Moves the checkpoint (compare-and-set: a follower that lost it writes nothing), credits each new transfer to
   * its intent and deposit, and settles the intents it funded, all in one transaction. Returns how many were new.
   */
  async apply(batch: { previous: number | null; next: number; transfers: WatchedTransfer[] }): Promise<number> {
    let credited = 0;
    const now = this.clock.now();
    const settled = await movingIntents(this.db, this.events, async (tx) => {
      if (!(await this.moveCheckpoint(tx, batch.previous, batch.next, now))) return [];
      const touched = new Set<string>();
      for (const transfer of batch.transfers) {
        const intentId = await this.credit(tx, transfer, now);
        if (intentId) {
          credited += 1;
          touched.add(intentId);
        }
      }
      return touched.size > 0 ? this.settleFunded(tx, [...touched], now) : [];
    });
    this.outcome('deposit', 'settled', settled.length);
    return credited;
  }

  private async moveCheckpoint(tx: Executor, previous: number | null, next: number, now: Date): Promise<boolean> {
    if (previous === null) {
      const inserted = await tx.insert(checkpoints).values({ network: this.network, blockNumber: next, updatedAt: now }).onConflictDoNothing().returning({ n: checkpoints.network });
      return inserted.length === 1;
    }
    const moved = await tx
      .update(checkpoints)
      .set({ blockNumber: next, updatedAt: now })
      .where(and(eq(checkpoints.network, this.network), eq(checkpoints.blockNumber, previous)))
      .returning({ n: checkpoints.network });
    return moved.length === 1;
  }

  /** Inserts the transfer's row (on time: mined before the intent's expiry) and adds its value, once; the intent it credited. */
  private async credit(tx: Executor, t: WatchedTransfer, now: Date): Promise<string | null> {
    const blockTime = new Date(t.blockTimestamp * 1000);
    const [row] = await rowsOf<{ intent_id: string }>(
      tx,
      sql`insert into ${transfers} (network, transaction_hash, log_index, intent_id, from_address, value, block_number, block_time, on_time, created_at)
        select ${this.network}, ${t.transactionHash}, ${t.logIndex}, d.intent_id, ${t.from}, ${t.value.toString()}::numeric, ${t.blockNumber},
               ${blockTime.toISOString()}::timestamptz, ${blockTime.toISOString()}::timestamptz < i.expires_at, ${now.toISOString()}::timestamptz
        from ${deposits} d join ${intents} i on i.id = d.intent_id
        where d.address = ${t.to}
        on conflict do nothing
        returning intent_id`,
    );
    if (!row) return null;
    const value = t.value.toString();
    await tx.update(deposits).set({ received: sql`${deposits.received} + ${value}::numeric` }).where(eq(deposits.intentId, row.intent_id));
    await tx.update(intents).set({ receivedAmount: sql`${intents.receivedAmount} + ${value}::numeric`, updatedAt: now }).where(eq(intents.id, row.intent_id));
    return row.intent_id;
  }

  /**
   * pending → settled for each of these intents (all pending ones with deposits when none are named) whose on-time
   * transfers add up to its amount: paid by the transfer that completed it (its transaction, sender and block time).
   */
  async settleFunded(tx: Executor, intentIds: string[] | null, now: Date): Promise<IntentRow[]> {
    const only = intentIds ? sql`and t.intent_id in (${sql.join(intentIds.map((id) => sql`${id}::uuid`), sql`, `)})` : sql``;
    const funded = await rowsOf<{ intent_id: string; transaction_hash: string; from_address: string; block_time: Timestamp }>(
      tx,
      sql`select distinct on (x.intent_id) x.intent_id, x.transaction_hash, x.from_address, x.block_time
        from (
          select t.*, sum(t.value) over (partition by t.intent_id order by t.block_number, t.log_index) as running
          from ${transfers} t join ${intents} i on i.id = t.intent_id
          where t.on_time and i.status = 'pending' ${only}
        ) x join ${intents} i on i.id = x.intent_id
        where x.running >= i.amount
        order by x.intent_id, x.block_number, x.log_index`,
    );
    const settled: IntentRow[] = [];
    for (const row of funded) {
      const [moved] = await tx
        .update(intents)
        .set({
          status: 'settled',
          paidVia: 'deposit',
          transactionHash: row.transaction_hash,
          payer: row.from_address,
          settledAt: toDate(row.block_time),
          failureCode: null,
          failureMessage: null,
          updatedAt: now,
        })
        .where(and(eq(intents.id, row.intent_id), eq(intents.status, 'pending')))
        .returning();
      if (moved) settled.push(moved);
    }
    return settled;
  }

  /** The loop's catch-up: intents funded while they could not settle (an x402 payment was settling them then). */
  async settleAllFunded(): Promise<IntentRow[]> {
    const settled = await movingIntents(this.db, this.events, (tx) => this.settleFunded(tx, null, this.clock.now()));
    this.outcome('deposit', 'settled', settled.length);
    return settled;
  }

  // ---- sweeps ------------------------------------------------------------------------------------------------

  /** Deposits holding more than they passed on, with no sweep in flight and not waiting after a failed one. */
  async unswept(limit: number): Promise<Array<DepositRow & { payTo: string }>> {
    const rows = await this.db
      .select({ deposit: deposits, payTo: intents.payTo })
      .from(deposits)
      .innerJoin(intents, eq(intents.id, deposits.intentId))
      .where(
        and(
          sql`${deposits.received} > ${deposits.swept}`,
          or(isNull(deposits.sweepAfter), lte(deposits.sweepAfter, databaseNow(this.clock))),
          sql`not exists (select 1 from ${sweeps} s where s.intent_id = ${deposits.intentId} and s.status = 'sending')`,
        ),
      )
      .orderBy(asc(deposits.createdAt))
      .limit(limit);
    return rows.map((row) => ({ ...row.deposit, payTo: row.payTo }));
  }

  /** Records a signed sweep before it is sent; false when another one of this deposit is in flight. */
  async insertSweep(row: Omit<SweepRow, 'status' | 'transactionHash' | 'error' | 'updatedAt'>): Promise<boolean> {
    const inserted = await this.db
      .insert(sweeps)
      .values({ ...row, status: 'sending', updatedAt: row.createdAt })
      .onConflictDoNothing()
      .returning({ id: sweeps.id });
    return inserted.length === 1;
  }

  /** sending → settled, and what it moved counted as swept, once. */
  async sweepSettled(id: string, transactionHash: string, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [moved] = await tx
        .update(sweeps)
        .set({ status: 'settled', transactionHash, error: null, updatedAt: now })
        .where(and(eq(sweeps.id, id), eq(sweeps.status, 'sending')))
        .returning();
      if (!moved) return false;
      await tx.update(deposits).set({ swept: sql`${deposits.swept} + ${moved.amount}::numeric`, sweepAfter: null }).where(eq(deposits.intentId, moved.intentId));
      return true;
    });
  }

  /** sending → failed (nothing moved); the deposit waits until `retryAt` before the next sweep. */
  async sweepFailed(id: string, error: string, retryAt: Date, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [moved] = await tx
        .update(sweeps)
        .set({ status: 'failed', error, updatedAt: now })
        .where(and(eq(sweeps.id, id), eq(sweeps.status, 'sending')))
        .returning();
      if (!moved) return false;
      await tx.update(deposits).set({ sweepAfter: retryAt }).where(eq(deposits.intentId, moved.intentId));
      return true;
    });
  }

  /** A deposit whose sweep could not even be tried (below the minimum, say) waits too. */
  async sweepLater(intentId: string, retryAt: Date): Promise<void> {
    await this.db.update(deposits).set({ sweepAfter: retryAt }).where(eq(deposits.intentId, intentId));
  }

  async noteSweep(id: string, fields: { transactionHash?: string | null; error?: string | null }, now: Date): Promise<void> {
    await this.db.update(sweeps).set({ ...fields, updatedAt: now }).where(and(eq(sweeps.id, id), eq(sweeps.status, 'sending')));
  }

  /** Sweeps still `sending` since before `before` (a crash, an unknown outcome): the reconciler's list. */
  async sendingSince(before: Date, limit: number): Promise<SweepRow[]> {
    return this.db
      .select()
      .from(sweeps)
      .where(and(eq(sweeps.status, 'sending'), lt(sweeps.updatedAt, before)))
      .orderBy(asc(sweeps.updatedAt))
      .limit(limit);
  }

  async sweepsOf(intentId: string): Promise<SweepRow[]> {
    return this.db.select().from(sweeps).where(eq(sweeps.intentId, intentId)).orderBy(asc(sweeps.createdAt));
  }
}
