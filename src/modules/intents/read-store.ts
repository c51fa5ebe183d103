import { and, asc, desc, eq, gt, lt, lte, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { paymentIntentAuthorizations as authorizations, paymentIntents as intents, type IntentRow } from './tables.js';

// The statements on payment intents and their authorizations that only read: one intent (by id, by
// externalId), an authorization, the owner's filtered listing and its totals, and the worker's queue of
// settling intents. Kept apart from store.ts, whose every statement moves an intent and answers to its
// concurrency argument; nothing here moves anything. IntentsStore (store.ts) extends this class.

export type AuthorizationRow = typeof authorizations.$inferSelect;

/** The owner's listing filters. */
export interface ListFilter {
  merchantId?: string;
  status?: IntentRow['status'];
  /** A prefix of the externalId. */
  externalId?: string;
}

export class IntentReadStore {
  constructor(protected readonly db: Db) {}

  async byExternalId(merchantId: string, externalId: string): Promise<IntentRow | undefined> {
    const [row] = await this.db.select().from(intents).where(and(eq(intents.merchantId, merchantId), eq(intents.externalId, externalId)));
    return row;
  }

  async byId(id: string): Promise<IntentRow | undefined> {
    const [row] = await this.db.select().from(intents).where(eq(intents.id, id));
    return row;
  }

  /**
   * A project's intents, newest first, for its owner's dashboard; `before` is the last id of the previous
   * page. Read-only: a pending intent past its expiry is filtered and shown as expired (intentView's
   * caller) without being moved.
   */
  async listInProject(projectId: string, filter: ListFilter & { before?: string; limit: number }, now: Date): Promise<IntentRow[]> {
    return this.db
      .select()
      .from(intents)
      .where(and(this.listed(projectId, filter, now), filter.before ? lt(intents.id, filter.before) : undefined))
      .orderBy(desc(intents.id))
      .limit(filter.limit);
  }

  /** Totals of the intents the listing's filters select (all pages). */
  async totalsInProject(projectId: string, filter: ListFilter, now: Date) {
    const [row] = await this.db
      .select({
        count: sql<number>`count(*)::int`,
        settledCount: sql<number>`(count(*) filter (where ${intents.status} = 'settled'))::int`,
        settledUsdCents: sql<number>`coalesce(sum(${intents.amountUsdCents}) filter (where ${intents.status} = 'settled'), 0)::bigint`,
        received: sql<string>`coalesce(sum(${intents.receivedAmount}), 0)::text`,
        refundedUsdCents: sql<number>`coalesce(sum(${intents.refundedUsdCents}), 0)::bigint`,
      })
      .from(intents)
      .where(this.listed(projectId, filter, now));
    return row!;
  }

  /** The owner's filters: merchant, status (a pending intent past its expiry counts as expired), externalId prefix. */
  private listed(projectId: string, filter: ListFilter, now: Date) {
    const due = and(eq(intents.status, 'pending'), lte(intents.expiresAt, now));
    const status =
      filter.status === 'expired'
        ? sql`(${intents.status} = 'expired' or ${due})`
        : filter.status === 'pending'
          ? and(eq(intents.status, 'pending'), gt(intents.expiresAt, now))
          : filter.status
            ? eq(intents.status, filter.status)
            : undefined;
    // A prefix, matched literally: LIKE's wildcards in the search are escaped.
    const externalId = filter.externalId ? sql`${intents.externalId} like ${`${filter.externalId.replace(/[\\%_]/g, (c) => `\\${c}`)}%`}` : undefined;
    return and(eq(intents.projectId, projectId), filter.merchantId ? eq(intents.merchantId, filter.merchantId) : undefined, status, externalId);
  }

  async byIdInProject(id: string, projectId: string): Promise<IntentRow | undefined> {
    const [row] = await this.db.select().from(intents).where(and(eq(intents.id, id), eq(intents.projectId, projectId)));
    return row;
  }

  async authorization(id: string): Promise<AuthorizationRow | undefined> {
    const [row] = await this.db.select().from(authorizations).where(eq(authorizations.id, id));
    return row;
  }

  async authorizationByNonce(payer: string, nonce: string): Promise<AuthorizationRow | undefined> {
    const [row] = await this.db.select().from(authorizations).where(and(eq(authorizations.payer, payer), eq(authorizations.nonce, nonce)));
    return row;
  }

  /** Intents settling since before `before`, oldest first, after a (settlingSince, id) cursor (the worker's queue). */
  async settlingSince(before: Date, after: { since: Date; id: string } | null, limit: number): Promise<IntentRow[]> {
    return this.db
      .select()
      .from(intents)
      .where(
        and(
          eq(intents.status, 'settling'),
          lte(intents.settlingSince, before),
          after ? sql`(${intents.settlingSince}, ${intents.id}) > (${after.since.toISOString()}::timestamptz, ${after.id}::uuid)` : undefined,
        ),
      )
      .orderBy(asc(intents.settlingSince), asc(intents.id))
      .limit(limit);
  }
}
