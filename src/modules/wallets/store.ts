import { and, asc, desc, eq, gt, inArray, isNull, lt, lte, ne, or, sql } from 'drizzle-orm';
import { getAddress } from 'viem';
import type { Executor } from '../../platform/db.js';
import { walletCredentials, walletPayments, wallets } from './tables.js';

export type WalletRow = typeof wallets.$inferSelect;
export type CredentialRow = typeof walletCredentials.$inferSelect;
export type PaymentRow = typeof walletPayments.$inferSelect;

/** Payment states the chain has not decided yet: the reconciler's work. */
export const OPEN_PAYMENT_STATES = ['pending', 'unknown'] as const;
/** An open payment with its payer (the wallet's address), as the reconciler reads it. */
export interface OpenPayment {
  row: PaymentRow;
  payer: `0x${string}`;
}

/** SQL of the Wallet API. Reads by a management credential are always scoped to its wallets. */
export class WalletsStore {
  constructor(private readonly db: Executor) {}

  async insertWallet(row: WalletRow): Promise<void> {
    await this.db.insert(wallets).values(row);
  }

  async insertCredential(row: CredentialRow): Promise<void> {
    await this.db.insert(walletCredentials).values(row);
  }

  async wallet(id: string): Promise<WalletRow | undefined> {
    const [row] = await this.db.select().from(wallets).where(eq(wallets.id, id));
    return row;
  }

  async ownedWallet(owner: string, id: string): Promise<WalletRow | undefined> {
    const [row] = await this.db.select().from(wallets).where(and(eq(wallets.id, id), eq(wallets.ownerCredentialId, owner)));
    return row;
  }

  async walletByExternalId(owner: string, externalId: string): Promise<WalletRow | undefined> {
    const [row] = await this.db.select().from(wallets).where(and(eq(wallets.ownerCredentialId, owner), eq(wallets.externalId, externalId)));
    return row;
  }

  async walletsOf(owner: string): Promise<WalletRow[]> {
    return this.db.select().from(wallets).where(eq(wallets.ownerCredentialId, owner)).orderBy(desc(wallets.createdAt), desc(wallets.id));
  }

  /** Claims due wallets for a provisioning attempt: the lease keeps other workers off until it ends. */
  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<WalletRow[]> {
    return this.db.transaction(async (tx) => {
      const due = await tx
        .select({ id: wallets.id })
        .from(wallets)
        .where(and(ne(wallets.status, 'active'), lte(wallets.nextAttemptAt, now)))
        .orderBy(asc(wallets.nextAttemptAt))
        .limit(limit)
        .for('update', { skipLocked: true });
      if (due.length === 0) return [];
      const claimed: WalletRow[] = [];
      for (const { id } of due) {
        const [row] = await tx.update(wallets).set({ nextAttemptAt: leaseUntil }).where(eq(wallets.id, id)).returning();
        if (row) claimed.push(row);
      }
      return claimed;
    });
  }

  async markActive(id: string, address: string, keyRef: string, now: Date): Promise<WalletRow | undefined> {
    const [row] = await this.db
      .update(wallets)
      .set({ status: 'active', address, keyRef, lastError: null, nextAttemptAt: null, provisionAttempts: sql`${wallets.provisionAttempts} + 1`, updatedAt: now })
      .where(and(eq(wallets.id, id), ne(wallets.status, 'active')))
      .returning();
    return row;
  }

  async markFailed(id: string, error: string, nextAttemptAt: Date, now: Date): Promise<WalletRow | undefined> {
    const [row] = await this.db
      .update(wallets)
      .set({ status: 'failed', lastError: error, nextAttemptAt, provisionAttempts: sql`${wallets.provisionAttempts} + 1`, updatedAt: now })
      .where(and(eq(wallets.id, id), ne(wallets.status, 'active')))
      .returning();
    return row;
  }

  /** Operator retry: due at once, attempt count reset (the backoff starts over). */
  async retryNow(id: string, now: Date): Promise<boolean> {
    const rows = await this.db
      .update(wallets)
      .set({ nextAttemptAt: now, provisionAttempts: 0, updatedAt: now })
      .where(and(eq(wallets.id, id), ne(wallets.status, 'active')))
      .returning({ id: wallets.id });
    return rows.length > 0;
  }

  async credentialsOf(walletId: string): Promise<CredentialRow[]> {
    return this.db.select().from(walletCredentials).where(eq(walletCredentials.walletId, walletId)).orderBy(desc(walletCredentials.createdAt), desc(walletCredentials.id));
  }

  async credential(walletId: string, id: string): Promise<CredentialRow | undefined> {
    const [row] = await this.db.select().from(walletCredentials).where(and(eq(walletCredentials.id, id), eq(walletCredentials.walletId, walletId)));
    return row;
  }

  /** Revokes an active credential; a revoked one stays as it is (revocation is idempotent). */
  async revokeCredential(walletId: string, id: string, now: Date): Promise<CredentialRow | undefined> {
    const [row] = await this.db
      .update(walletCredentials)
      .set({ status: 'revoked', revokedAt: now })
      .where(and(eq(walletCredentials.id, id), eq(walletCredentials.walletId, walletId), eq(walletCredentials.status, 'active')))
      .returning();
    return row ?? this.credential(walletId, id);
  }

  /** The live credential behind a secret hash: active and not expired at `now`. */
  async liveCredentialByHash(secretHash: string, now: Date): Promise<Pick<CredentialRow, 'id' | 'walletId'> | undefined> {
    const [row] = await this.db
      .select({ id: walletCredentials.id, walletId: walletCredentials.walletId })
      .from(walletCredentials)
      .where(and(eq(walletCredentials.secretHash, secretHash), eq(walletCredentials.status, 'active'), or(isNull(walletCredentials.expiresAt), gt(walletCredentials.expiresAt, now))))
      .limit(1);
    return row;
  }

  async touchCredential(id: string, now: Date): Promise<void> {
    await this.db
      .update(walletCredentials)
      .set({ lastUsedAt: now })
      .where(and(eq(walletCredentials.id, id), or(isNull(walletCredentials.lastUsedAt), lt(walletCredentials.lastUsedAt, sql`${now}::timestamptz - interval '60 seconds'`))));
  }

  async insertPayment(row: PaymentRow): Promise<void> {
    await this.db.insert(walletPayments).values(row);
  }

  async payment(id: string): Promise<PaymentRow | undefined> {
    const [row] = await this.db.select().from(walletPayments).where(eq(walletPayments.id, id));
    return row;
  }

  /**
   * What the upstream answered to the paid retry. `upstream_status` and `settlement` are facts and
   * are always kept; the state moves (to `next`, with `error`) only while the payment is open, so
   * an answer arriving after the reconciler decided it never undoes the chain's verdict.
   */
  async recordAnswer(id: string, answer: { upstreamStatus: number | null; settlement: Record<string, unknown> | null; next: (typeof OPEN_PAYMENT_STATES)[number]; error: string | null }, now: Date): Promise<PaymentRow> {
    const open = inArray(walletPayments.status, [...OPEN_PAYMENT_STATES]);
    const [row] = await this.db
      .update(walletPayments)
      .set({
        upstreamStatus: answer.upstreamStatus,
        settlement: answer.settlement,
        status: sql`case when ${open} then ${answer.next}::text else ${walletPayments.status} end`,
        error: sql`case when ${open} then ${answer.error}::text else ${walletPayments.error} end`,
        updatedAt: now,
      })
      .where(eq(walletPayments.id, id))
      .returning();
    return row;
  }

  /**
   * open → settled with the chain's transaction; undefined when it was no longer open. `amount`: what the chain
   * moved when it may be less than reserved (upto), booked in place of the maximum. `transaction` null with `note`
   * (kept in `error`): an upto permit spent by a transaction not recognised, booked at its maximum.
   */
  async settlePayment(id: string, transaction: string | null, now: Date, amount?: bigint, note?: string): Promise<PaymentRow | undefined> {
    const [row] = await this.db
      .update(walletPayments)
      .set({ status: 'settled', transaction, error: note ?? null, updatedAt: now, ...(amount === undefined ? {} : { amount: amount.toString() }) })
      .where(and(eq(walletPayments.id, id), inArray(walletPayments.status, [...OPEN_PAYMENT_STATES])))
      .returning();
    return row;
  }

  /** open → failed (the chain's word: expired unused, or used without the transfer). */
  async failPayment(id: string, reason: string, now: Date): Promise<PaymentRow | undefined> {
    const [row] = await this.db
      .update(walletPayments)
      .set({ status: 'failed', error: reason, updatedAt: now })
      .where(and(eq(walletPayments.id, id), inArray(walletPayments.status, [...OPEN_PAYMENT_STATES])))
      .returning();
    return row;
  }

  /**
   * Open payments on `network` not touched since `idleSince`, oldest first, after `cursor`, with the
   * payer's address (wallet_payments_open_idx holds just the open rows).
   */
  async openPayments(network: string, idleSince: Date, cursor: { createdAt: Date; id: string } | null, limit: number): Promise<OpenPayment[]> {
    const rows = await this.db
      .select({ row: walletPayments, payer: wallets.address })
      .from(walletPayments)
      .innerJoin(wallets, eq(wallets.id, walletPayments.walletId))
      .where(
        and(
          inArray(walletPayments.status, [...OPEN_PAYMENT_STATES]),
          eq(walletPayments.network, network),
          // A channel's vouchers are decided by the channel (its seller's receipts, its close), not by a transfer.
          ne(walletPayments.scheme, 'batch-settlement'),
          lt(walletPayments.updatedAt, idleSince),
          cursor ? sql`(${walletPayments.createdAt}, ${walletPayments.id}) > (${cursor.createdAt}, ${cursor.id})` : undefined,
        ),
      )
      .orderBy(asc(walletPayments.createdAt), asc(walletPayments.id))
      .limit(limit);
    return rows.filter((r) => r.payer).map((r) => ({ row: r.row, payer: getAddress(r.payer!) }));
  }

  /** createdAt of the oldest open payment on `network` (the reconciler's lag), or null. */
  async oldestOpen(network: string): Promise<Date | null> {
    const [row] = await this.db
      .select({ at: sql<Date | string | null>`min(${walletPayments.createdAt})` })
      .from(walletPayments)
      .where(and(inArray(walletPayments.status, [...OPEN_PAYMENT_STATES]), eq(walletPayments.network, network), ne(walletPayments.scheme, 'batch-settlement')));
    return row?.at ? new Date(row.at) : null;
  }

  /** Newest first; ids are UUIDv7, so `before` is a keyset cursor. */
  /** The wallet's payments among these ids (others' ids match nothing). */
  async paymentsByIds(walletId: string, ids: string[]): Promise<PaymentRow[]> {
    if (ids.length === 0) return [];
    return this.db.select().from(walletPayments).where(and(eq(walletPayments.walletId, walletId), inArray(walletPayments.id, ids))).orderBy(desc(walletPayments.id));
  }

  async paymentsOf(walletId: string, limit: number, before?: string): Promise<PaymentRow[]> {
    return this.db
      .select()
      .from(walletPayments)
      .where(and(eq(walletPayments.walletId, walletId), before ? lt(walletPayments.id, before) : undefined))
      .orderBy(desc(walletPayments.id))
      .limit(limit);
  }
}
