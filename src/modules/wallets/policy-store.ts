import { and, desc, eq, gt, gte, inArray, sql, type SQL } from 'drizzle-orm';
import { databaseNow, type Clock } from '../../platform/clock.js';
import { rowsOf } from '../../platform/sql-rows.js';
import type { Executor } from '../../platform/db.js';
import type { ApprovalStatus, Policy } from './policy-schemas.js';
import type { PaymentRow } from './store.js';
import { walletApprovalQueues, walletApprovals, walletPayments, walletPolicies, wallets } from './tables.js';

export type PolicyRow = typeof walletPolicies.$inferSelect;
export type ApprovalRow = typeof walletApprovals.$inferSelect;
/** An approval with the status the database's clock gives it (a pending or approved one past expires_at is `expired`). */
export type ApprovalRead = ApprovalRow & { effectiveStatus: ApprovalStatus };

export interface WindowUsage {
  /** Settled payments of the window, atomic units. */
  spent: bigint;
  /** Open payments of the window (pending, unknown). */
  reserved: bigint;
  /** The oldest payment the window counts. */
  oldest: Date | null;
}

/** The payment an approval is asked for (or used by). */
export type ApprovalAsk = Pick<ApprovalRow, 'network' | 'asset' | 'amount' | 'payTo' | 'method' | 'url'>;

/** Approvals of the same call: method and url as asked, to the same recipient in the same asset. */
const sameCall = (ask: ApprovalAsk) =>
  and(eq(walletApprovals.network, ask.network), eq(walletApprovals.asset, ask.asset), eq(walletApprovals.payTo, ask.payTo), eq(walletApprovals.method, ask.method), eq(walletApprovals.url, ask.url));

/** The status the database's clock gives an approval: a pending or approved one past expires_at is expired. */
const effective = (now: SQL) => sql<ApprovalStatus>`case when ${walletApprovals.status} in ('pending', 'approved') and ${walletApprovals.expiresAt} <= ${now} then 'expired' else ${walletApprovals.status} end`;

/**
 * SQL of spend policies and approvals (wallet_policies, wallet_approvals) and the window sums over
 * wallet_payments. Approval state changes are conditional UPDATEs on the expected status and on the
 * database's clock (`expires_at > now()`, shifted by a test clock), so a decision and an expiry, or two decisions, cannot both win.
 */
export class PolicyStore {
  constructor(
    private readonly db: Executor,
    private readonly clock: Clock,
  ) {}

  /** The database's now (shifted by a test clock): windows and approvals go by it, whatever a node's clock says. */
  private get now(): SQL {
    return databaseNow(this.clock);
  }

  private get live(): SQL {
    return gt(walletApprovals.expiresAt, this.now);
  }

  async policy(walletId: string): Promise<PolicyRow | undefined> {
    const [row] = await this.db.select().from(walletPolicies).where(eq(walletPolicies.walletId, walletId));
    return row;
  }

  /**
   * Locks the wallet's row until the transaction ends: a wallet's reservations happen one at a time, on any node.
   * NO KEY UPDATE: inserts of rows that reference the wallet (their foreign key check) do not wait on it.
   */
  async lockWallet(walletId: string): Promise<void> {
    await this.db.select({ id: wallets.id }).from(wallets).where(eq(wallets.id, walletId)).for('no key update');
  }

  async putPolicy(walletId: string, policy: Policy, updatedBy: string, now: Date): Promise<PolicyRow> {
    const [row] = await this.db
      .insert(walletPolicies)
      .values({ walletId, policy, updatedBy, updatedAt: now })
      .onConflictDoUpdate({ target: walletPolicies.walletId, set: { policy, updatedBy, updatedAt: now } })
      .returning();
    return row;
  }

  /**
   * Per window (seconds), the payments of the wallet in (network, asset) created in it by the database's clock
   * (pay-and-call rows are stamped by it: spend-guard.ts) that still count: settled ones are spent, open ones
   * reserved; failed ones released. Transfers (method TRANSFER: the owner moving funds) are not the credential
   * holder's spending and are not counted. One scan of the longest window serves every window (FILTER).
   */
  async usage(walletId: string, network: string, asset: string, windows: readonly number[]): Promise<WindowUsage[]> {
    if (windows.length === 0) return [];
    const now = this.now;
    const inWindow = (seconds: number) => sql`${walletPayments.createdAt} > ${now} - make_interval(secs => ${seconds})`;
    const columns = windows.flatMap((seconds) => [
      sql`coalesce(sum(${walletPayments.amount}) filter (where ${walletPayments.status} = 'settled' and ${inWindow(seconds)}), 0)::text`,
      sql`coalesce(sum(${walletPayments.amount}) filter (where ${walletPayments.status} <> 'settled' and ${inWindow(seconds)}), 0)::text`,
      sql`min(${walletPayments.createdAt}) filter (where ${inWindow(seconds)})`,
    ]);
    const rows = await rowsOf<Record<string, unknown>>(
      this.db,
      sql`select ${sql.join(
        columns.map((column, i) => sql`${column} as ${sql.identifier(`c${i}`)}`),
        sql`, `,
      )} from ${walletPayments}
          where ${walletPayments.walletId} = ${walletId} and ${inWindow(Math.max(...windows))}
            and ${walletPayments.network} = ${network} and lower(${walletPayments.asset}) = ${asset.toLowerCase()}
            and ${walletPayments.status} <> 'failed' and ${walletPayments.method} <> 'TRANSFER'`,
    );
    const row = rows[0] ?? {};
    return windows.map((_seconds, i) => {
      const oldest = row[`c${3 * i + 2}`] as Date | string | null | undefined;
      return { spent: BigInt((row[`c${3 * i}`] as string | undefined) ?? '0'), reserved: BigInt((row[`c${3 * i + 1}`] as string | undefined) ?? '0'), oldest: oldest ? new Date(oldest) : null };
    });
  }

  /**
   * What the payments recorded under one credential add up to in (network, asset), for all time: settled ones spent,
   * open ones reserved, failed ones released (a credential's ceiling: spend-guard.ts).
   */
  async credentialUsage(walletId: string, credentialId: string, network: string, asset: string): Promise<Omit<WindowUsage, 'oldest'>> {
    const [row] = await rowsOf<{ spent: string | null; reserved: string | null }>(
      this.db,
      sql`select coalesce(sum(${walletPayments.amount}) filter (where ${walletPayments.status} = 'settled'), 0)::text as spent,
                 coalesce(sum(${walletPayments.amount}) filter (where ${walletPayments.status} <> 'settled'), 0)::text as reserved
          from ${walletPayments}
          where ${walletPayments.credentialId} = ${credentialId} and ${walletPayments.walletId} = ${walletId}
            and ${walletPayments.network} = ${network} and lower(${walletPayments.asset}) = ${asset.toLowerCase()}
            and ${walletPayments.status} <> 'failed'`,
    );
    return { spent: BigInt(row?.spent ?? '0'), reserved: BigInt(row?.reserved ?? '0') };
  }

  /** Records a reserved payment, stamped with the database's now: the windows count by that clock on every node. */
  async insertReserved(row: PaymentRow): Promise<void> {
    await this.db.insert(walletPayments).values({ ...row, createdAt: this.now });
  }

  /** A new pending approval expiring `timeoutSeconds` after the database's now. */
  async insertApproval(row: Omit<ApprovalRow, 'createdAt' | 'expiresAt' | 'status' | 'decidedBy' | 'decidedAt' | 'paymentId' | 'consumedAt'>, timeoutSeconds: number): Promise<ApprovalRead> {
    // One reading of the clock for both: a test clock's shift is computed per reading.
    const now = this.now;
    const [inserted] = await this.db
      .insert(walletApprovals)
      .values({ ...row, status: 'pending', createdAt: now, expiresAt: sql`${now} + make_interval(secs => ${timeoutSeconds})` })
      .returning({ ...approvalColumns, effectiveStatus: effective(this.now) });
    return inserted;
  }

  /** A live pending approval for exactly this payment (a repeated call waits on the same one). */
  async pendingFor(walletId: string, ask: ApprovalAsk): Promise<ApprovalRead | undefined> {
    const [row] = await this.db
      .select({ ...approvalColumns, effectiveStatus: effective(this.now) })
      .from(walletApprovals)
      .where(
        and(
          eq(walletApprovals.walletId, walletId),
          eq(walletApprovals.status, 'pending'),
          this.live,
          sameCall(ask),
          eq(walletApprovals.amount, ask.amount),
        ),
      )
      .orderBy(desc(walletApprovals.id))
      .limit(1);
    return row;
  }

  async livePendingCount(walletId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: sql<number>`count(*)::int` })
      .from(walletApprovals)
      .where(and(eq(walletApprovals.walletId, walletId), eq(walletApprovals.status, 'pending'), this.live));
    return Number(row?.n ?? 0);
  }

  async approval(walletId: string, id: string): Promise<ApprovalRead | undefined> {
    const [row] = await this.db
      .select({ ...approvalColumns, effectiveStatus: effective(this.now) })
      .from(walletApprovals)
      .where(and(eq(walletApprovals.id, id), eq(walletApprovals.walletId, walletId)));
    return row;
  }

  /** Newest first, optionally by effective status; at most `limit`. */
  async approvalsOf(walletId: string, status: ApprovalStatus | undefined, limit: number): Promise<ApprovalRead[]> {
    return this.db
      .select({ ...approvalColumns, effectiveStatus: effective(this.now) })
      .from(walletApprovals)
      .where(and(eq(walletApprovals.walletId, walletId), status ? sql`${effective(this.now)} = ${status}` : undefined))
      .orderBy(desc(walletApprovals.id))
      .limit(limit);
  }

  /**
   * pending → approved | denied, and approved → denied (an approval withdrawn before it is used), while it is
   * live; undefined when it was in no state to take the decision.
   */
  async decide(walletId: string, id: string, decision: 'approved' | 'denied', decidedBy: string): Promise<ApprovalRead | undefined> {
    const from = decision === 'denied' ? ['pending', 'approved'] : ['pending'];
    const [row] = await this.db
      .update(walletApprovals)
      .set({ status: decision, decidedBy, decidedAt: this.now })
      .where(and(eq(walletApprovals.id, id), eq(walletApprovals.walletId, walletId), inArray(walletApprovals.status, from), this.live))
      .returning({ ...approvalColumns, effectiveStatus: effective(this.now) });
    return row;
  }

  /**
   * approved → consumed by `paymentId`, once: only while live, for the same method, url, recipient and asset,
   * and for at most the approved amount.
   */
  async consume(walletId: string, id: string, ask: ApprovalAsk, paymentId: string): Promise<boolean> {
    const rows = await this.db
      .update(walletApprovals)
      .set({ status: 'consumed', paymentId, consumedAt: this.now })
      .where(
        and(
          eq(walletApprovals.id, id),
          eq(walletApprovals.walletId, walletId),
          eq(walletApprovals.status, 'approved'),
          this.live,
          sameCall(ask),
          gte(walletApprovals.amount, ask.amount),
        ),
      )
      .returning({ id: walletApprovals.id });
    return rows.length > 0;
  }

  /** The event queue the wallet's approval requests go to; undefined: none. */
  async approvalQueue(walletId: string): Promise<{ projectId: string; queueId: string } | undefined> {
    const [row] = await this.db.select({ projectId: walletApprovalQueues.projectId, queueId: walletApprovalQueues.queueId }).from(walletApprovalQueues).where(eq(walletApprovalQueues.walletId, walletId));
    return row;
  }

  /** Names the queue (replacing any), or with null stops the events. */
  async setApprovalQueue(walletId: string, target: { projectId: string; queueId: string } | null, now: Date): Promise<void> {
    if (!target) return void (await this.db.delete(walletApprovalQueues).where(eq(walletApprovalQueues.walletId, walletId)));
    await this.db
      .insert(walletApprovalQueues)
      .values({ walletId, ...target, updatedAt: now })
      .onConflictDoUpdate({ target: walletApprovalQueues.walletId, set: { ...target, updatedAt: now } });
  }
}

const approvalColumns = {
  id: walletApprovals.id,
  walletId: walletApprovals.walletId,
  status: walletApprovals.status,
  network: walletApprovals.network,
  asset: walletApprovals.asset,
  amount: walletApprovals.amount,
  payTo: walletApprovals.payTo,
  method: walletApprovals.method,
  url: walletApprovals.url,
  requestedBy: walletApprovals.requestedBy,
  createdAt: walletApprovals.createdAt,
  expiresAt: walletApprovals.expiresAt,
  decidedBy: walletApprovals.decidedBy,
  decidedAt: walletApprovals.decidedAt,
  paymentId: walletApprovals.paymentId,
  consumedAt: walletApprovals.consumedAt,
} satisfies Record<keyof ApprovalRow, unknown>;
