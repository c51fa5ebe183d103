import { and, asc, eq, getTableColumns, gt, lt, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import { uploadOrders as orders } from './tables.js';

export type OrderRow = typeof orders.$inferSelect;
export type KeyedOrder = OrderRow & { quoteOpen: boolean };
export type NewOrder = Pick<OrderRow, 'id' | 'keyHash' | 'fileSha256' | 'fileBytes' | 'mediaType' | 'amount' | 'network' | 'asset' | 'payTo' | 'retentionDays'>;
export interface PendingPayment {
  payer: string;
  nonce: string;
  validBefore: string;
}

/** Why a claim of the order for a payment did not happen. */
export type ClaimResult = 'claimed' | 'not_awaiting' | 'quote_expired' | 'authorization_taken';

const AUTHORIZATION_UNIQUE = 'upload_orders_authorization_unique';

/**
 * SQL of upload orders. Every status move is one conditional UPDATE whose WHERE names the state it
 * moves from (and, for a payment, the authorization), so of two concurrent movers exactly one matches
 * a row. Expiry is decided by the database's now(), never by a node's clock.
 */
export class StorageStore {
  constructor(private readonly db: Db) {}

  // The paid upload's four statements, planned once: drizzle builds a query per call otherwise, which
  // cost as much CPU as the statements themselves (bench/RESULTS.md, bench/storage).
  #prepared: ReturnType<StorageStore['prepare']> | null = null;
  private prepared() {
    return (this.#prepared ??= this.prepare());
  }
  private prepare() {
    const p = sql.placeholder;
    const value = (name: string, type = 'text') => sql`${p(name)}::${sql.raw(type)}`;
    return {
      byKeyHash: this.db
        .select({ ...getTableColumns(orders), quoteOpen: sql<boolean>`${orders.quoteExpiresAt} > now()` })
        .from(orders)
        .where(eq(orders.keyHash, p('keyHash')))
        .prepare('upload_order_by_key'),
      claim: this.db
        .update(orders)
        .set({ status: 'payment_pending', payer: value('payer'), authorizationNonce: value('nonce'), authorizationValidBefore: value('validBefore', 'numeric'), pendingSince: sql`now()`, updatedAt: sql`now()` })
        .where(and(eq(orders.id, p('id')), eq(orders.status, 'awaiting_payment'), gt(orders.quoteExpiresAt, sql`now()`)))
        .returning({ id: orders.id })
        .prepare('upload_order_claim'),
      markPaid: this.db
        .update(orders)
        .set({ status: 'paid', transactionHash: value('transactionHash'), pendingSince: null, updatedAt: sql`now()` })
        .where(and(eq(orders.id, p('id')), eq(orders.status, 'payment_pending'), eq(orders.payer, p('payer')), eq(orders.authorizationNonce, p('nonce'))))
        .returning()
        .prepare('upload_order_mark_paid'),
      fulfil: this.db
        .update(orders)
        .set({ status: 'fulfilled', cid: value('cid'), fulfilledAt: sql`now()`, expiresAt: sql`now() + make_interval(days => ${orders.retentionDays})`, updatedAt: sql`now()` })
        .where(and(eq(orders.id, p('id')), eq(orders.status, 'paid')))
        .returning()
        .prepare('upload_order_fulfil'),
    };
  }

  /** Creates the key's order, or finds the one a concurrent request with the same key created. */
  async createOrFind(order: NewOrder, quoteLifetimeSeconds: number): Promise<{ row: KeyedOrder; created: boolean }> {
    const [created] = await this.db
      .insert(orders)
      .values({
        ...order,
        status: 'awaiting_payment',
        quoteExpiresAt: sql`now() + make_interval(secs => ${quoteLifetimeSeconds})`,
        createdAt: sql`now()`,
        updatedAt: sql`now()`,
      })
      .onConflictDoNothing({ target: orders.keyHash })
      .returning();
    if (created) return { row: { ...created, quoteOpen: true }, created: true };
    const found = await this.byKeyHash(order.keyHash);
    if (!found) throw new Error('upload order vanished after a key conflict');
    return { row: found, created: false };
  }

  /** The key's order, and whether its quote is still open by the database's clock (one round trip). */
  async byKeyHash(keyHash: string): Promise<KeyedOrder | undefined> {
    const [row] = await this.prepared().byKeyHash.execute({ keyHash });
    return row;
  }

  /** The gateway's question: is this CID an image some order still pays to keep? */
  async servedImage(cid: string): Promise<Pick<OrderRow, 'mediaType' | 'fileBytes'> | undefined> {
    const [row] = await this.db
      .select({ mediaType: orders.mediaType, fileBytes: orders.fileBytes })
      .from(orders)
      .where(and(eq(orders.cid, cid), eq(orders.status, 'fulfilled'), gt(orders.expiresAt, sql`now()`)))
      .limit(1);
    return row;
  }

  /**
   * awaiting_payment → payment_pending for one verified authorization, before anything is settled:
   * the one step that lets a single request spend. The quote must still be open (database time).
   */
  async claim(id: string, payment: PendingPayment): Promise<ClaimResult> {
    try {
      const [row] = await this.prepared().claim.execute({ id, ...payment });
      if (row) return 'claimed';
    } catch (error) {
      if (isUniqueViolation(error, AUTHORIZATION_UNIQUE)) return 'authorization_taken';
      throw error;
    }
    const current = await this.byId(id);
    return current?.status === 'awaiting_payment' ? 'quote_expired' : 'not_awaiting';
  }

  /** payment_pending → awaiting_payment: the settle definitively moved nothing, so a new signature may pay. */
  async release(id: string, payment: Pick<PendingPayment, 'payer' | 'nonce'>): Promise<boolean> {
    const rows = await this.db
      .update(orders)
      .set({ status: 'awaiting_payment', payer: null, authorizationNonce: null, authorizationValidBefore: null, pendingSince: null, updatedAt: sql`now()` })
      .where(and(eq(orders.id, id), eq(orders.status, 'payment_pending'), eq(orders.payer, payment.payer), eq(orders.authorizationNonce, payment.nonce)))
      .returning({ id: orders.id });
    return rows.length === 1;
  }

  /**
   * payment_pending → paid with the transaction that moved the money (its transfer claimed for this
   * order first, in chain_payment_uses: a transaction may carry several payments).
   */
  async markPaid(id: string, payment: Pick<PendingPayment, 'payer' | 'nonce'>, transactionHash: string): Promise<OrderRow | undefined> {
    const [row] = await this.prepared().markPaid.execute({ id, payer: payment.payer, nonce: payment.nonce, transactionHash: transactionHash.toLowerCase() });
    return row;
  }

  /** paid → fulfilled: the storage year starts now. Undefined when it was not paid (a concurrent redeem won). */
  async fulfil(id: string, cid: string): Promise<OrderRow | undefined> {
    const [row] = await this.prepared().fulfil.execute({ id, cid });
    return row;
  }

  async byId(id: string): Promise<OrderRow | undefined> {
    const [row] = await this.db.select().from(orders).where(eq(orders.id, id));
    return row;
  }

  /** Orders whose payment has waited since before `olderThanSeconds`: the reconciler's work list. */
  async pendingBefore(olderThanSeconds: number, limit: number): Promise<OrderRow[]> {
    return this.db
      .select()
      .from(orders)
      .where(and(eq(orders.status, 'payment_pending'), lt(orders.pendingSince, sql`now() - make_interval(secs => ${olderThanSeconds})`)))
      .orderBy(asc(orders.pendingSince))
      .limit(limit);
  }

  /** fulfilled → expired for orders whose retention has ended; answers how many moved. */
  async expireDue(limit: number): Promise<number> {
    const due = this.db
      .select({ id: orders.id })
      .from(orders)
      .where(and(eq(orders.status, 'fulfilled'), lt(orders.expiresAt, sql`now()`)))
      .limit(limit);
    const rows = await this.db
      .update(orders)
      .set({ status: 'expired', updatedAt: sql`now()` })
      .where(and(sql`${orders.id} in ${due}`, eq(orders.status, 'fulfilled')))
      .returning({ id: orders.id });
    return rows.length;
  }
}
