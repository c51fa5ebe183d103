import { and, asc, eq, gt, lt, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import { relayBroadcasts as broadcasts } from './tables.js';

const AUTHORIZATION_UNIQUE = 'relay_broadcasts_authorization_unique';

export type BroadcastRow = typeof broadcasts.$inferSelect;
/** What names a record: the payer whose credential made it, and its Idempotency-Key. */
export type RecordKey = Pick<BroadcastRow, 'payer' | 'idempotencyKey'>;
export interface StoredAnswer {
  httpStatus: number;
  answer: unknown;
}

/**
 * SQL of broadcast idempotency records. A payer's key gets its row once (unique payer and key); only its
 * owner completes it (the WHERE names the owner), and a takeover of a stale in-flight row is one
 * conditional UPDATE, so two repeats of the key can never both settle.
 */
export class RelayStore {
  constructor(private readonly db: Db) {}

  /**
   * Creates the payer's record of the key, owned by `owner`: `key_taken` when the payer's key already has
   * one, `authorization_taken` when another key's record holds this authorization.
   */
  async create(row: Pick<BroadcastRow, 'id' | 'idempotencyKey' | 'fingerprint' | 'payer' | 'nonce' | 'owner'>, retentionSeconds: number): Promise<BroadcastRow | 'key_taken' | 'authorization_taken'> {
    let created: BroadcastRow | undefined;
    try {
      [created] = await this.db
        .insert(broadcasts)
        .values({
          ...row,
          status: 'in_flight',
          createdAt: sql`now()`,
          updatedAt: sql`now()`,
          expiresAt: sql`now() + make_interval(secs => ${retentionSeconds})`,
        })
        .onConflictDoNothing({ target: [broadcasts.payer, broadcasts.idempotencyKey] })
        .returning();
    } catch (error) {
      if (isUniqueViolation(error, AUTHORIZATION_UNIQUE)) return 'authorization_taken';
      throw error;
    }
    return created ?? 'key_taken';
  }

  async byKey(key: RecordKey): Promise<BroadcastRow | undefined> {
    const [row] = await this.db
      .select()
      .from(broadcasts)
      .where(and(eq(broadcasts.payer, key.payer), eq(broadcasts.idempotencyKey, key.idempotencyKey)));
    return row;
  }

  /** The owner's final answer; false when the record is no longer its own (taken over). */
  async complete(id: string, owner: string, stored: StoredAnswer): Promise<boolean> {
    const rows = await this.db
      .update(broadcasts)
      .set({ status: 'completed', httpStatus: stored.httpStatus, answer: stored.answer, updatedAt: sql`now()` })
      .where(and(eq(broadcasts.id, id), eq(broadcasts.owner, owner), eq(broadcasts.status, 'in_flight')))
      .returning({ id: broadcasts.id });
    return rows.length === 1;
  }

  /** Forgets an in-flight record whose attempt changed nothing (refused before any transaction): the key may be retried. */
  async discard(id: string, owner: string): Promise<void> {
    await this.db.delete(broadcasts).where(and(eq(broadcasts.id, id), eq(broadcasts.owner, owner), eq(broadcasts.status, 'in_flight')));
  }

  /** Takes over an in-flight record untouched for `staleSeconds` (its owner died or lost its answer). */
  async takeOver(id: string, staleSeconds: number, owner: string): Promise<boolean> {
    const rows = await this.db
      .update(broadcasts)
      .set({ owner, updatedAt: sql`now()` })
      .where(and(eq(broadcasts.id, id), eq(broadcasts.status, 'in_flight'), lt(broadcasts.updatedAt, sql`now() - make_interval(secs => ${staleSeconds})`)))
      .returning({ id: broadcasts.id });
    return rows.length === 1;
  }

  /** The owner gives the record up with its outcome unknown: the next repeat of the key takes it over at once. */
  async abandon(id: string, owner: string): Promise<void> {
    await this.db
      .update(broadcasts)
      .set({ updatedAt: sql`'-infinity'::timestamptz` })
      .where(and(eq(broadcasts.id, id), eq(broadcasts.owner, owner), eq(broadcasts.status, 'in_flight')));
  }

  /**
   * The payer's records still kept (not past retention), counted up to `atMost` (the capacity: past it the
   * number does not matter, so the count never walks more of the index than that), and the seconds until the
   * first of them expires (when a slot frees up). In expiry order on (payer, expires_at), so the first is the oldest.
   */
  async liveOf(payer: string, atMost: number): Promise<{ count: number; firstExpiresInSeconds: number }> {
    const kept = this.db
      .select({ expiresAt: broadcasts.expiresAt })
      .from(broadcasts)
      .where(and(eq(broadcasts.payer, payer), gt(broadcasts.expiresAt, sql`now()`)))
      .orderBy(asc(broadcasts.expiresAt))
      .limit(atMost)
      .as('kept');
    const [row] = await this.db
      .select({
        n: sql<number>`count(*)::int`,
        left: sql<string | null>`ceil(extract(epoch from min(${kept.expiresAt}) - now()))`,
      })
      .from(kept);
    return { count: row?.n ?? 0, firstExpiresInSeconds: Math.max(1, Number(row?.left ?? 1)) };
  }

  /** Deletes records past retention; answers how many went. */
  async prune(limit: number): Promise<number> {
    const due = this.db.select({ id: broadcasts.id }).from(broadcasts).where(lt(broadcasts.expiresAt, sql`now()`)).limit(limit);
    const rows = await this.db.delete(broadcasts).where(sql`${broadcasts.id} in ${due}`).returning({ id: broadcasts.id });
    return rows.length;
  }
}
