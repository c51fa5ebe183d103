// The settlement ledger's queries. Every state change is a conditional update on the open states,
// so a settle, its retries and the reconciler can race and still agree on one final row.
import { and, asc, eq, exists, getTableColumns, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { SettleResponse } from '@x402/core/types';
import { anonymousSettleClaimant, settleClaimant } from '../settlement-claimant.js';
import { PaymentUses, type PaymentUse } from '../../chain/payment-uses.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { assertSafeJson } from '../../platform/json-guard.js';
import { perTurn } from '../../platform/per-turn.js';
import { x402Settlements, x402SettlementsOpen, type SettlementRow } from '../tables.js';
import { claimValues, keyColumnSlotValues, keyColumns, matchesValues, OPEN, sameKey, type NewSettlement, type SettlementKey } from './ledger-rows.js';
import { ledgerStatements } from './ledger-statements.js';

export type { NewSettlement, SettlementKey } from './ledger-rows.js';

export type Claim =
  | { kind: 'claimed'; row: SettlementRow }
  /** The authorization has a row already: someone else's settle (or an earlier one of this payment). */
  | { kind: 'exists'; row: SettlementRow }
  /** The payer's payment-identifier id is bound to another authorization. */
  | { kind: 'id_conflict' };

/** Who may hand out a settled row's one `success: true`. */
export type Answerer =
  /** The settle that claimed the row. */
  | { claimToken: string }
  /**
   * Another settle of the same payload, once the row's owner is gone (disowned, or its lease of `leaseMs`
   * lapsed by the database's clock) and never answered; when the owner named a payment-identifier, only a
   * settle carrying it.
   */
  | { leaseMs: number; paymentId: string | null };

export interface Outcome {
  status: 'settled' | 'failed';
  response: SettleResponse;
  /** The Transfer log that paid it (settled only): what its one success claims in chain_payment_uses. */
  transferLogIndex?: number;
  /**
   * A verdict read from the chain for the row as it carried this hash (null: none): written only while it still
   * does. A row reopened meanwhile (its batch starved its call, see reopen) is being sent again, and a stale
   * "its transaction failed, the authorization is unused" would otherwise close it under the new send.
   */
  readWithTxHash?: string | null;
}

/** Thrown inside answerSuccess's transaction to undo its update: the transfer already bought something else. */
class TransferTaken extends Error {}

/** The claim token of a row whose claiming settle gave up answering (see disown). */
const DISOWNED = '';

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
  readonly #uses: PaymentUses;
  readonly #statements: ReturnType<typeof ledgerStatements>;
  // The settles that resume together (a batch's, when its receipt arrives) share each statement below.
  readonly #claims = perTurn((rows: NewSettlement[]) => this.#insertClaims(rows));
  readonly #broadcasts = perTurn((calls: Array<{ key: SettlementKey; txHash: string }>) => this.#writeBroadcasts(calls));
  readonly #finishes = perTurn((calls: Array<{ key: SettlementKey; outcome: Outcome }>) => this.#writeOutcomes(calls));
  readonly #ownerAnswers = perTurn((calls: Array<{ key: SettlementKey; claimToken: string }>) => this.#answerOwners(calls));

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {
    this.#uses = new PaymentUses(db);
    this.#statements = ledgerStatements(db);
  }

  async find(key: SettlementKey): Promise<SettlementRow | null> {
    const rows = await this.db.select().from(x402Settlements).where(byKey(key)).limit(1);
    return rows[0] ?? null;
  }

  async findByPaymentId(payer: string, paymentId: string): Promise<SettlementRow | null> {
    const rows = await this.db
      .select()
      .from(x402Settlements)
      .where(and(eq(x402Settlements.payer, payer), eq(x402Settlements.paymentId, paymentId)))
      .limit(1);
    return rows[0] ?? null;
  }

  /** Inserts a claimed row; the primary key and the payment-id index decide every race. */
  async claim(row: NewSettlement): Promise<Claim> {
    assertSafeJson(row.request); // here, so a bad request fails alone and not the turn's shared INSERT
    const inserted = await this.#claims(row);
    if (inserted) return { kind: 'claimed', row: inserted };
    const existing = await this.find(row);
    if (existing) return { kind: 'exists', row: existing };
    if (row.paymentId && (await this.findByPaymentId(row.payer, row.paymentId))) return { kind: 'id_conflict' };
    throw new Error('settlement row vanished during claim');
  }

  /** A turn's claims in one INSERT: each gets its row back, or null where the key or the payment id was taken. */
  async #insertClaims(rows: NewSettlement[]): Promise<Array<SettlementRow | null>> {
    // In key order, so two nodes' batches lock shared keys in the same order (no deadlock between them).
    const ordered = [...rows].sort((a, b) => (keyString(a) < keyString(b) ? -1 : 1));
    const inserted = await this.#statements.claims.execute(claimValues(ordered, this.clock.now()));
    const byToken = new Map(inserted.map((row) => [row.claimToken, row]));
    return rows.map((row) => byToken.get(row.claimToken) ?? null);
  }

  /**
   * Hands out the row's one `success: true`: true for exactly one caller per settled row, and only while
   * the transfer that paid it has bought nothing else (chain_payment_uses, claimed in the same
   * transaction). The WHERE clause and that primary key are the whole rule.
   */
  async answerSuccess(key: SettlementKey, by: Answerer): Promise<boolean> {
    if ('claimToken' in by) return this.#ownerAnswers({ key, claimToken: by.claimToken });
    const who = and(
      isNull(x402Settlements.successAnsweredAt),
      or(eq(x402Settlements.claimToken, DISOWNED), leaseLapsed(by.leaseMs)),
      by.paymentId === null ? isNull(x402Settlements.paymentId) : or(isNull(x402Settlements.paymentId), eq(x402Settlements.paymentId, by.paymentId)),
    );
    try {
      return await this.db.transaction(async (tx) => {
        const updated = await tx
          .update(x402Settlements)
          .set({ successAnsweredAt: this.clock.now() })
          .where(and(byKey(key), eq(x402Settlements.status, 'settled'), who))
          .returning();
        const row = updated[0];
        if (!row) return false;
        // Rows settled before transfers were claimed have no log index: their success stands alone.
        if (row.txHash && row.transferLogIndex !== null && !(await this.#uses.claim(paymentUseOf(row), claimantOf(row, by.paymentId), tx))) throw new TransferTaken();
        return true;
      });
    } catch (error) {
      if (error instanceof TransferTaken) return false;
      throw error;
    }
  }

  /**
   * The claiming settles' answers of one turn, in one transaction: each settled, unanswered row still held
   * by its caller's claim is marked answered and its transfer claimed; where the transfer has bought
   * something else, the mark is taken back before the commit (the single answer's rollback, per row).
   */
  async #answerOwners(calls: Array<{ key: SettlementKey; claimToken: string }>): Promise<boolean[]> {
    const values = keyColumns(calls.map(({ key, claimToken }) => [key, [claimToken]]));
    const won = await this.db.transaction(async (tx) => {
      const marked = await tx
        .update(x402Settlements)
        .set({ successAnsweredAt: this.clock.now() })
        .from(sql`unnest(${values}) as v(network, asset, payer, nonce, token)`)
        .where(and(matchesValues, eq(x402Settlements.status, 'settled'), isNull(x402Settlements.successAnsweredAt), eq(x402Settlements.claimToken, sql`v.token`)))
        .returning(getTableColumns(x402Settlements));
      // Rows settled before transfers were claimed have no log index: their success stands alone.
      const paid = marked.filter((row) => row.txHash && row.transferLogIndex !== null);
      const taken = await this.#uses.claimMany(paid.map((row) => ({ use: paymentUseOf(row), claimant: claimantOf(row, row.paymentId) })), tx);
      const lost = paid.filter((_, i) => !taken[i]);
      if (lost.length > 0) await tx.update(x402Settlements).set({ successAnsweredAt: null }).where(or(...lost.map(byKey)));
      const lostKeys = new Set(lost.map(keyString));
      return new Set(marked.filter((row) => !lostKeys.has(keyString(row))).map((row) => `${keyString(row)}|${row.claimToken}`));
    });
    // One answer per claim: a second identical call in the turn gets none.
    return calls.map(({ key, claimToken }) => won.delete(`${keyString(key)}|${claimToken}`));
  }

  /**
   * A claim whose owner died before sending anything (no transaction, lease lapsed by the database's clock)
   * passes to `claimToken`, which executes it. Returns the row if this caller took it.
   */
  async takeOver(key: SettlementKey, leaseMs: number, claimToken: string): Promise<SettlementRow | null> {
    const taken = await this.db
      .update(x402Settlements)
      .set({ claimToken, claimedAt: sql`now()`, updatedAt: this.clock.now() })
      .where(and(byKey(key), eq(x402Settlements.status, 'claimed'), isNull(x402Settlements.txHash), or(eq(x402Settlements.claimToken, DISOWNED), leaseLapsed(leaseMs))))
      .returning();
    return taken[0] ?? null;
  }

  /**
   * The claim's call failed inside the mined batch `batchHash` while its payment still verifies (judge.ts): the
   * row goes back to a claim that has sent nothing, its lease starting again, so its owner sends it once more,
   * alone. Until that send's hash is recorded the row reads as any such claim: the reconciler waits for the
   * authorization to be used or to expire, and a takeover after the lease may send it too (the token executes
   * one authorization once). Null if the row moved on meanwhile.
   */
  async reopen(key: SettlementKey, claimToken: string, batchHash: string): Promise<SettlementRow | null> {
    const reopened = await this.db
      .update(x402Settlements)
      .set({ status: 'claimed', txHash: null, claimedAt: sql`now()`, updatedAt: this.clock.now() })
      .where(and(byKey(key), eq(x402Settlements.claimToken, claimToken), eq(x402Settlements.status, 'broadcast'), eq(x402Settlements.txHash, batchHash)))
      .returning();
    return reopened[0] ?? null;
  }

  /** Whether the claim `claimToken` still holds the row (a takeover replaces it). */
  async owns(key: SettlementKey, claimToken: string): Promise<boolean> {
    const rows = await this.db.select({ nonce: x402Settlements.nonce }).from(x402Settlements).where(and(byKey(key), eq(x402Settlements.claimToken, claimToken))).limit(1);
    return rows.length === 1;
  }

  /** The claiming settle ended without a final answer (pending, or failed after sending): it will not answer success. */
  async disown(key: SettlementKey, claimToken: string): Promise<void> {
    await this.db
      .update(x402Settlements)
      .set({ claimToken: DISOWNED, updatedAt: this.clock.now() })
      .where(and(byKey(key), eq(x402Settlements.claimToken, claimToken), isNull(x402Settlements.successAnsweredAt)));
  }

  /**
   * The relayer sent the transaction: from here on the row is only ever resolved from the chain. The
   * settles of one batch learn its hash together: calls made in the same turn share one statement.
   */
  recordBroadcast(key: SettlementKey, txHash: string): Promise<void> {
    return this.#broadcasts({ key, txHash });
  }

  async #writeBroadcasts(calls: Array<{ key: SettlementKey; txHash: string }>): Promise<void[]> {
    // One row per key, the latest hash (a replacement's after the original's); UPDATE … FROM would pick either.
    const latest = new Map(calls.map((c) => [keyString(c.key), c]));
    const values = keyColumnSlotValues([...latest.values()].map(({ key, txHash }) => [key, [txHash]]));
    await this.#statements.broadcasts.execute({ ...values, now: this.clock.now().toISOString() });
    return calls.map(() => undefined);
  }

  /** Writes the final outcome once; returns the row as finally stored (possibly someone else's outcome). */
  async finish(key: SettlementKey, outcome: Outcome): Promise<SettlementRow> {
    assertSafeJson(outcome.response);
    const written = await this.#finishes({ key, outcome });
    if (written) return written;
    const row = await this.find(key);
    if (!row) throw new Error('settlement row vanished before finish');
    return row;
  }

  /**
   * A turn's outcomes in one UPDATE of the rows still open; a key given twice takes the first outcome, its owner's
   * (unguarded) before a verdict read from the chain (guarded, possibly stale: it may not be written at all).
   */
  async #writeOutcomes(calls: Array<{ key: SettlementKey; outcome: Outcome }>): Promise<Array<SettlementRow | null>> {
    const first = new Map<string, number>();
    calls.forEach(({ key, outcome }, i) => {
      const taken = first.get(keyString(key));
      if (taken === undefined || (isGuarded(calls[taken]!.outcome) && !isGuarded(outcome))) first.set(keyString(key), i);
    });
    const values = keyColumnSlotValues(
      [...first.values()].map((i) => {
        const { key, outcome } = calls[i]!;
        const { response } = outcome;
        const logIndex = outcome.transferLogIndex == null ? null : String(outcome.transferLogIndex);
        return [key, [outcome.status, response.transaction || null, logIndex, response.errorReason ?? null, response.errorMessage ?? null, JSON.stringify(response), isGuarded(outcome) ? 'yes' : null, outcome.readWithTxHash ?? null]];
      }),
    );
    const updated = await this.#statements.outcomes.execute({ ...values, now: this.clock.now().toISOString() });
    const byKeyString = new Map(updated.map((row) => [keyString(row), row]));
    return calls.map(({ key }, i) => (first.get(keyString(key)) === i ? (byKeyString.get(keyString(key)) ?? null) : null));
  }

  /** Drops a claim that provably broadcast nothing, so a retry starts clean. */
  async release(key: SettlementKey, claimToken: string): Promise<void> {
    const released = this.db.$with('released').as(
      this.db
        .delete(x402Settlements)
        .where(and(byKey(key), eq(x402Settlements.claimToken, claimToken), eq(x402Settlements.status, 'claimed'), isNull(x402Settlements.txHash)))
        .returning({ network: x402Settlements.network, asset: x402Settlements.asset, payer: x402Settlements.payer, nonce: x402Settlements.nonce }),
    );
    await this.db
      .with(released)
      .delete(x402SettlementsOpen)
      .where(exists(this.db.select({ one: sql`1` }).from(released).where(sameKey(released))));
  }

  /**
   * Open rows untouched since `before`, oldest first: the reconciler's work list. It reads the open list
   * (x402_settlements_open), so a tick costs what is open, not what has settled; the few open rows are
   * sorted in memory (updated_at has no index: an index on it would keep every update from being HOT).
   */
  async listOpen(before: Date, limit: number): Promise<SettlementRow[]> {
    return this.db
      .select(getTableColumns(x402Settlements))
      .from(x402SettlementsOpen)
      .innerJoin(x402Settlements, sameKey(x402Settlements))
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

/** Who a settled row's success is for in chain_payment_uses: its payment-identifier, else its authorization. */
const claimantOf = (row: SettlementRow, paymentId: string | null) => (paymentId ? settleClaimant(paymentId) : anonymousSettleClaimant(row));

/** A verdict read from the chain (Outcome.readWithTxHash): written only while the row carries the hash it was read with. */
const isGuarded = (outcome: Outcome) => outcome.readWithTxHash !== undefined;

/** The row's claim is older than `leaseMs` by the database's clock (never a node's). */
const leaseLapsed = (leaseMs: number) => lt(x402Settlements.claimedAt, sql`now() - ${leaseMs} * interval '1 millisecond'`);

/** What the facilitator's success for one authorization claims: its own paired transfer. */
const paymentUseOf = (row: SettlementRow): PaymentUse => ({
  network: row.network,
  transactionHash: row.txHash!,
  logIndex: row.transferLogIndex!,
  asset: row.token ?? row.asset,
  payer: row.payer,
  nonce: row.nonce,
  payTo: row.payTo,
  amount: row.amount,
});
