import { and, eq, getTableColumns, gt, inArray, lte, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { databaseNow, type Clock } from '../../platform/clock.js';
import type { Db, Executor } from '../../platform/db.js';
import { paymentIntentAuthorizations as authorizations, paymentIntents as intents, type IntentRow } from './tables.js';
import { jsonText } from '../../platform/db-types.js';
import { noIntentEvents, type IntentEventSink } from './event-sink.js';
import { IntentReadStore } from './read-store.js';

/** What creation decides; the merchant supplies project, network, asset and payTo. */
export type IntentDraft = Pick<
  IntentRow,
  'id' | 'merchantId' | 'externalId' | 'customerRef' | 'description' | 'metadata' | 'returnUrl' | 'amountUsdCents' | 'amount' | 'createdAt' | 'expiresAt'
>;
export type NewAuthorization = Omit<typeof authorizations.$inferInsert, 'outcome' | 'createdAt' | 'updatedAt'>;

/** A verified payment attempt that did not pay the intent, which stays payable (its lastPaymentError). */
export interface AttemptError {
  code: string;
  message: string;
}

/** What a claim found: the intent moved to `settling`, or why it did not. */
export type ClaimResult = 'claimed' | 'not_pending' | 'authorization_taken';

class ClaimLost extends Error {}

/**
 * SQL that creates payment intents and moves them; the reads are in read-store.ts (this class's base).
 * Every status move is one conditional UPDATE whose WHERE names the state
 * (and, while settling, the authorization) it moves from, so concurrent movers cannot both win.
 * A move to settled, failed or expired publishes its intent event in the same transaction (events.ts):
 * only the mover that wins publishes, and a rolled-back move publishes nothing.
 */
export class IntentsStore extends IntentReadStore {
  constructor(
    db: Db,
    /** The projects module's query for an enabled merchant of a project (id, project_id, network, asset, pay_to). */
    private readonly enabledMerchant: (projectId: SQLWrapper, merchantId: SQLWrapper) => SQL,
    /** Expiries are decided at the database's now() (see databaseNow), never a node's clock. */
    private readonly clock: Clock,
    /** Where moves to settled, failed or expired publish (the project's intent-events queue). */
    private readonly events: IntentEventSink = noIntentEvents,
  ) {
    super(db);
  }

  private moving(move: (tx: Executor) => Promise<IntentRow[]>): Promise<IntentRow[]> {
    return movingIntents(this.db, this.events, move);
  }

  /**
   * One round trip for the common case: inserts the intent with its merchant's project, network,
   * asset and payTo, taken from the projects module's "enabled merchant of this project" query.
   * Undefined when that query yields nothing or (merchant, externalId) already exists.
   */
  async insertForMerchant(draft: IntentDraft, projectId: string): Promise<IntentRow | undefined> {
    const [row] = await this.createStatement().execute({
      id: draft.id,
      projectId,
      merchantId: draft.merchantId,
      externalId: draft.externalId,
      customerRef: draft.customerRef,
      description: draft.description,
      metadata: draft.metadata === null ? null : jsonText(draft.metadata),
      returnUrl: draft.returnUrl,
      amountUsdCents: draft.amountUsdCents,
      amount: draft.amount,
      createdAt: draft.createdAt.toISOString(),
      expiresAt: draft.expiresAt.toISOString(),
    });
    if (!row) return undefined;
    const none = {
      paidVia: null,
      receivedAmount: '0',
      refundedUsdCents: 0,
      transactionHash: null,
      payer: null,
      authorizationId: null,
      settlingSince: null,
      failureCode: null,
      failureMessage: null,
      lastPaymentErrorCode: null,
      lastPaymentErrorMessage: null,
      lastPaymentErrorAt: null,
      settledAt: null,
    };
    return { ...draft, ...row, ...none, status: 'pending', currency: 'USD', updatedAt: draft.createdAt };
  }

  // Prepared once: creation is the hot path, and a planned statement costs PostgreSQL ~40 % less.
  private created: ReturnType<IntentsStore['prepareCreate']> | null = null;
  private createStatement() {
    return (this.created ??= this.prepareCreate());
  }
  private prepareCreate() {
    const p = (name: string) => sql.placeholder(name);
    const values: Partial<Record<keyof IntentRow, SQL>> = {
      id: sql`${p('id')}::uuid`,
      projectId: sql`m.project_id`,
      merchantId: sql`m.id`,
      externalId: sql`${p('externalId')}::text`,
      customerRef: sql`${p('customerRef')}::text`,
      description: sql`${p('description')}::text`,
      metadata: sql`${p('metadata')}::jsonb`,
      returnUrl: sql`${p('returnUrl')}::text`,
      status: sql`'pending'`,
      amountUsdCents: sql`${p('amountUsdCents')}::integer`,
      amount: sql`${p('amount')}::numeric`,
      currency: sql`'USD'`,
      network: sql`m.network`,
      asset: sql`m.asset`,
      payTo: sql`m.pay_to`,
      createdAt: sql`${p('createdAt')}::timestamptz`,
      updatedAt: sql`${p('createdAt')}::timestamptz`,
      expiresAt: sql`${p('expiresAt')}::timestamptz`,
      receivedAmount: sql`0`,
      refundedUsdCents: sql`0`,
    };
    // insert ... select lists every column in table order; the rest start out null.
    const columns = Object.keys(getTableColumns(intents)) as Array<keyof IntentRow>;
    const merchant = this.enabledMerchant(p('projectId'), p('merchantId'));
    return this.db
      .insert(intents)
      .select(sql`select ${sql.join(columns.map((column) => values[column] ?? sql`null`), sql`, `)} from (${merchant}) m`)
      .onConflictDoNothing({ target: [intents.merchantId, intents.externalId] })
      .returning({ projectId: intents.projectId, network: intents.network, asset: intents.asset, payTo: intents.payTo })
      .prepare('payment_intent_create');
  }

  /**
   * pending → settling, reserving the authorization in the same transaction: either both happen or
   * neither. Runs before anything is sent to the facilitator's settle.
   */
  async claim(auth: NewAuthorization, now: Date): Promise<ClaimResult> {
    try {
      return await this.db.transaction(async (tx) => {
        const reserved = await tx
          .insert(authorizations)
          .values({ ...auth, outcome: 'settling', createdAt: now, updatedAt: now })
          .onConflictDoNothing({ target: [authorizations.payer, authorizations.nonce] })
          .returning({ id: authorizations.id });
        if (reserved.length === 0) return 'authorization_taken';
        const moved = await tx
          .update(intents)
          .set({ status: 'settling', authorizationId: auth.id, settlingSince: now, failureCode: null, failureMessage: null, updatedAt: now })
          .where(
            and(
              eq(intents.id, auth.intentId),
              eq(intents.status, 'pending'),
              gt(intents.expiresAt, databaseNow(this.clock)),
              // A merchant disabled after the pay request read it still stops the claim, so nothing is settled for it.
              // FOR SHARE: a disable waits for a claim that read the merchant enabled, and a claim waiting on the
              // disable reads its outcome; either way the order is one.
              sql`exists (${this.enabledMerchant(intents.projectId, intents.merchantId)} for share)`,
            ),
          )
          .returning({ id: intents.id });
        if (moved.length === 0) throw new ClaimLost();
        return 'claimed';
      });
    } catch (error) {
      if (error instanceof ClaimLost) return 'not_pending';
      throw error;
    }
  }

  /** settling → settled with the transaction (whose transfer the caller has claimed for this intent: chain_payment_uses). */
  async settle(intentId: string, authorizationId: string, tx: { hash: string; payer: string; settledAt: Date }, now: Date): Promise<boolean> {
    const moved = await this.moving(async (db) => {
      const rows = await db
        .update(intents)
        .set({
          status: 'settled',
          paidVia: 'x402',
          transactionHash: tx.hash,
          payer: tx.payer,
          settledAt: tx.settledAt,
          // The x402 payment is exactly the intent's amount; its deposit address may have received more.
          receivedAmount: sql`${intents.receivedAmount} + ${intents.amount}`,
          failureCode: null,
          failureMessage: null,
          updatedAt: now,
        })
        .where(this.settlingWith(intentId, authorizationId))
        .returning();
      if (rows.length > 0) await db.update(authorizations).set({ outcome: 'settled', transactionHash: tx.hash, updatedAt: now }).where(eq(authorizations.id, authorizationId));
      return rows;
    });
    return moved.length > 0;
  }

  /** settling → failed: the authorization's transfer paid something else (reconciliation's verdict; pay never fails an intent). */
  async fail(intentId: string, authorizationId: string, failure: { code: string; message: string }, now: Date): Promise<boolean> {
    return this.moveFromSettling(intentId, authorizationId, { status: 'failed', failureCode: failure.code, failureMessage: failure.message, updatedAt: now }, (db) =>
      setOutcome(db, authorizationId, 'failed', now),
    );
  }

  /**
   * settling → pending when nothing was sent (the facilitator unreachable, its gas float low or a settle budget
   * spent): the reservation goes, so the same payment may be retried; `attempt` is what the payer is told.
   */
  async release(intentId: string, authorizationId: string, attempt: AttemptError, now: Date): Promise<boolean> {
    return this.moveFromSettling(intentId, authorizationId, { status: 'pending', authorizationId: null, settlingSince: null, ...lastPaymentError(attempt, now), updatedAt: now }, async (db) => {
      await db.delete(authorizations).where(eq(authorizations.id, authorizationId));
    });
  }

  /**
   * settling → pending (or expired, past expiresAt) when the authorization cannot pay this intent and
   * nothing moved for it: it expired unused (`unused`), it had already been settled for another payment
   * (`used_elsewhere`), or its settle was refused before any transfer (`failed`: the balance fell short, it
   * expired, the transfer reverted). It stays reserved so it is never accepted again; `attempt` becomes the
   * intent's lastPaymentError, `failure` its failureCode (a reconciliation condition; null for pay's own).
   */
  async reopen(
    intentId: string,
    authorizationId: string,
    attempt: AttemptError,
    now: Date,
    { outcome, failure }: { outcome: 'unused' | 'used_elsewhere' | 'failed'; failure: AttemptError | null },
  ): Promise<boolean> {
    const status = sql`case when ${intents.expiresAt} > ${databaseNow(this.clock)} then 'pending' else 'expired' end`;
    return this.moveFromSettling(
      intentId,
      authorizationId,
      {
        status,
        authorizationId: null,
        settlingSince: null,
        failureCode: failure?.code ?? null,
        failureMessage: failure?.message ?? null,
        ...lastPaymentError(attempt, now),
        updatedAt: now,
      },
      (db) => setOutcome(db, authorizationId, outcome, now),
    );
  }

  /** A reconciliation condition on a settling intent (the state does not change). */
  async note(intentId: string, authorizationId: string, failure: { code: string; message: string }, now: Date): Promise<void> {
    await this.db
      .update(intents)
      .set({ failureCode: failure.code, failureMessage: failure.message, updatedAt: now })
      .where(this.settlingWith(intentId, authorizationId));
  }

  async recordPendingHash(authorizationId: string, hash: string, now: Date): Promise<void> {
    await this.db.update(authorizations).set({ transactionHash: hash, updatedAt: now }).where(eq(authorizations.id, authorizationId));
  }

  /** pending → expired once expiresAt has passed. */
  async expire(intentId: string, now: Date): Promise<boolean> {
    // Built before the transaction opens: databaseNow's test-clock shift is measured against the node's
    // clock, and inside a transaction now() is when it began, so measuring after would shift it back.
    const dbNow = databaseNow(this.clock);
    const moved = await this.moving((db) =>
      db
        .update(intents)
        .set({ status: 'expired', updatedAt: now })
        .where(and(eq(intents.id, intentId), eq(intents.status, 'pending'), lte(intents.expiresAt, dbNow)))
        .returning(),
    );
    return moved.length > 0;
  }

  /** Expires up to `limit` overdue pending intents (the worker's sweep). */
  async expireDue(now: Date, limit: number): Promise<number> {
    const dbNow = databaseNow(this.clock); // before the transaction, as in expire()
    const moved = await this.moving((db) => {
      const due = db
        .select({ id: intents.id })
        .from(intents)
        .where(and(eq(intents.status, 'pending'), lte(intents.expiresAt, dbNow)))
        .limit(limit);
      return db
        .update(intents)
        .set({ status: 'expired', updatedAt: now })
        .where(and(inArray(intents.id, due), eq(intents.status, 'pending'), lte(intents.expiresAt, dbNow)))
        .returning();
    });
    return moved.length;
  }

  private settlingWith(intentId: string, authorizationId: string) {
    return and(eq(intents.id, intentId), eq(intents.status, 'settling'), eq(intents.authorizationId, authorizationId));
  }

  /** One move out of `settling` for this authorization, plus its bookkeeping and its event, atomically. */
  private async moveFromSettling(
    intentId: string,
    authorizationId: string,
    set: PgUpdateSetSource<typeof intents>,
    then: (db: Executor) => Promise<void>,
  ): Promise<boolean> {
    const moved = await this.moving(async (db) => {
      const rows = await db.update(intents).set(set).where(this.settlingWith(intentId, authorizationId)).returning();
      if (rows.length > 0) await then(db);
      return rows;
    });
    return moved.length > 0;
  }
}

/**
 * Runs `move` in a transaction that also publishes the events of the intents it moved (events.ts); announces them
 * after the commit. Every store that moves intents (this one, deposits) moves them through here.
 */
export async function movingIntents(db: Db, events: IntentEventSink, move: (tx: Executor) => Promise<IntentRow[]>): Promise<IntentRow[]> {
  let queues: string[] = [];
  const moved = await db.transaction(async (tx) => {
    const rows = await move(tx);
    queues = await events.publish(tx, rows);
    return rows;
  });
  events.announce(queues);
  return moved;
}

const lastPaymentError = (attempt: AttemptError, at: Date) => ({ lastPaymentErrorCode: attempt.code, lastPaymentErrorMessage: attempt.message, lastPaymentErrorAt: at });

async function setOutcome(db: Executor, authorizationId: string, outcome: string, now: Date): Promise<void> {
  await db.update(authorizations).set({ outcome, updatedAt: now }).where(eq(authorizations.id, authorizationId));
}

