// The ledger's per-turn statements (a turn's claims, broadcasts and outcomes), each built once and prepared: drizzle
// spends 0.5–0.7 ms of CPU building one of them (bench/RESULTS.md, issue 46), whatever the turn's rows, and only the
// parameters change from turn to turn (one text[] per column, ledger-rows.ts). On PostgreSQL they are named
// prepared statements, parsed once per connection.
import { and, exists, getTableColumns, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { x402Settlements, x402SettlementsOpen } from '../tables.js';
import { claimRows, keyColumnSlots, matchesValues, OPEN, sameKey } from './ledger-rows.js';

/** The statements of one database handle; placeholders as ledger-rows.ts fills them. */
export function ledgerStatements(db: Db) {
  const claimed = db.$with('claimed').as(db.insert(x402Settlements).select(claimRows()).onConflictDoNothing().returning());
  // The claimed rows join the open list in the same statement; a leftover entry (none is expected) must not fail the claim.
  const listed = db.$with('listed').as(
    db
      .insert(x402SettlementsOpen)
      .select(db.select({ network: claimed.network, asset: claimed.asset, payer: claimed.payer, nonce: claimed.nonce }).from(claimed))
      .onConflictDoNothing(),
  );
  const claims = db.with(claimed, listed).select().from(claimed).prepare('x402_ledger_claims');

  // c0–c3 the key, c4 the hash.
  const broadcasts = db
    .update(x402Settlements)
    .set({ status: 'broadcast', txHash: sql`v.tx`, updatedAt: sql`${sql.placeholder('now')}::timestamptz` })
    .from(sql`unnest(${keyColumnSlots(5)}) as v(network, asset, payer, nonce, tx)`)
    .where(and(matchesValues, inArray(x402Settlements.status, OPEN)))
    .prepare('x402_ledger_broadcasts');

  // c0–c3 the key, then status, tx, log_index, reason, message, response, guarded, read_tx (ledger.ts #writeOutcomes).
  const now = sql`${sql.placeholder('now')}::timestamptz`;
  const finished = db.$with('finished').as(
    db
      .update(x402Settlements)
      .set({
        status: sql`v.status`,
        txHash: sql`v.tx`,
        transferLogIndex: sql`v.log_index::integer`,
        errorReason: sql`v.reason`,
        errorMessage: sql`v.message`,
        response: sql`v.response::jsonb`,
        updatedAt: now,
        finishedAt: now,
      })
      .from(sql`unnest(${keyColumnSlots(12)}) as v(network, asset, payer, nonce, status, tx, log_index, reason, message, response, guarded, read_tx)`)
      .where(and(matchesValues, inArray(x402Settlements.status, OPEN), sql`(v.guarded is null or ${x402Settlements.txHash} is not distinct from v.read_tx)`))
      .returning(getTableColumns(x402Settlements)),
  );
  // A finished row leaves the open list in the same statement.
  const unlisted = db.$with('unlisted').as(db.delete(x402SettlementsOpen).where(exists(db.select({ one: sql`1` }).from(finished).where(sameKey(finished)))));
  const outcomes = db.with(finished, unlisted).select().from(finished).prepare('x402_ledger_outcomes');

  return { claims, broadcasts, outcomes };
}
