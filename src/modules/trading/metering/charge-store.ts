import { and, desc, eq, lt, sql } from 'drizzle-orm';
import type { Db } from '../../../platform/db.js';
import { tradingCharges, type ChargeBoundary } from '../tables.js';

export type ChargeRow = typeof tradingCharges.$inferSelect;

/** Statements on metered charges (see tradingCharges). */
export class ChargeStore {
  constructor(private readonly db: Db) {}

  async find(accountId: string, boundary: ChargeBoundary, subject: string): Promise<ChargeRow | null> {
    const [row] = await this.db
      .select()
      .from(tradingCharges)
      .where(and(eq(tradingCharges.accountId, accountId), eq(tradingCharges.boundary, boundary), eq(tradingCharges.subject, subject)));
    return row ?? null;
  }

  /**
   * The one claim of a subject: a new row, or a failed one (nothing moved) taken over with this
   * authorization. Null when another claim holds it (settling or settled): that one decides.
   */
  async claim(row: ChargeRow): Promise<ChargeRow | null> {
    const { id, createdAt, ...retry } = row;
    const [claimed] = await this.db
      .insert(tradingCharges)
      .values(row)
      .onConflictDoUpdate({ target: [tradingCharges.accountId, tradingCharges.boundary, tradingCharges.subject], set: retry, setWhere: sql`${tradingCharges.status} = 'failed'` })
      .returning();
    return claimed ?? null;
  }

  /** settling → settled or failed; false when the charge had already left settling. */
  async finish(id: string, outcome: { status: 'settled'; transactionHash: string } | { status: 'failed'; reason: string }, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(tradingCharges)
      .set({ ...outcome, updatedAt: now })
      .where(and(eq(tradingCharges.id, id), eq(tradingCharges.status, 'settling')))
      .returning({ id: tradingCharges.id });
    return moved.length > 0;
  }

  /** Charges left settling since before `olderThan`: the reconciler's work. */
  async settling(olderThan: Date, limit: number): Promise<ChargeRow[]> {
    return this.db
      .select()
      .from(tradingCharges)
      .where(and(eq(tradingCharges.status, 'settling'), lt(tradingCharges.updatedAt, olderThan)))
      .orderBy(tradingCharges.updatedAt)
      .limit(limit);
  }

  async ofAccount(accountId: string, limit: number, before: string | null): Promise<ChargeRow[]> {
    return this.db
      .select()
      .from(tradingCharges)
      .where(and(eq(tradingCharges.accountId, accountId), before ? lt(tradingCharges.id, before) : undefined))
      .orderBy(desc(tradingCharges.id))
      .limit(limit);
  }
}
