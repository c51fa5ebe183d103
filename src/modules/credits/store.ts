import { and, asc, eq, lt, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { toDate, type Timestamp } from '../../platform/sql-rows.js';
import { creditBalances, creditTopUps, type TransferCause } from './tables.js';

export const SYSTEM_ACCOUNTS = { grants: 'system:grants', topUps: 'system:top-ups', agents: 'system:agents' } as const;
export const userAccount = (userId: string) => `user:${userId}`;

/** What a transfer is for: exactly one reference per cause (the table's CHECK says the same). */
export type TransferCauseRef =
  | { cause: 'grant'; note: string }
  | { cause: 'top_up'; topUpId: string }
  | { cause: 'agent_purchase'; agentId: string }
  | { cause: 'agent_renewal'; agentId: string }
  | { cause: 'refund'; refundOf: string; agentId?: string };

export interface Moved {
  transferId: string;
  balanceCents: number;
}

export type TopUpRow = typeof creditTopUps.$inferSelect;

/** One transfer as seen from a user's account: signed (+ in, − out), with the balance right after it. */
export interface LedgerRow {
  id: string;
  amountCents: number;
  balanceAfterCents: number;
  cause: TransferCause;
  agentId: string | null;
  topUpId: string | null;
  refundOf: string | null;
  createdAt: Date;
}

async function rows<T>(executor: Executor, statement: SQL): Promise<T[]> {
  return ((await executor.execute(statement)) as unknown as { rows: T[] }).rows;
}

const refs = (ref: TransferCauseRef) => ({
  agentId: ref.cause === 'agent_purchase' || ref.cause === 'agent_renewal' || ref.cause === 'refund' ? (ref.agentId ?? null) : null,
  topUpId: ref.cause === 'top_up' ? ref.topUpId : null,
  refundOf: ref.cause === 'refund' ? ref.refundOf : null,
  note: ref.cause === 'grant' ? ref.note : null,
});

/**
 * Every statement on the credits tables. A movement of a user's balance and its transfer row are one
 * statement: both happen or neither (a cause already used fails the transfer's unique index, and with it
 * the balance change). A debit's WHERE requires the balance: of concurrent debits, those that would overdraw
 * match no row after waiting for the row lock, and the CHECK refuses a negative balance whatever the writer.
 */
export class CreditsStore {
  constructor(private readonly db: Executor) {}

  async balance(userId: string, executor: Executor = this.db): Promise<number> {
    const [row] = await executor.select({ balance: creditBalances.balanceCents }).from(creditBalances).where(eq(creditBalances.userId, userId));
    return row?.balance ?? 0;
  }

  /** Into a user's account from a system account. */
  async credit(executor: Executor, userId: string, from: string, amountCents: number, ref: TransferCauseRef, transferId: string, now: Date): Promise<Moved> {
    const r = refs(ref);
    const [row] = await rows<{ balance_cents: string | number }>(
      executor,
      sql`with transfer as (
            insert into credit_transfers (id, from_account, to_account, amount_cents, cause, agent_id, top_up_id, refund_of, note, created_at)
            values (${transferId}, ${from}, ${userAccount(userId)}, ${amountCents}, ${ref.cause}, ${r.agentId}, ${r.topUpId}, ${r.refundOf}, ${r.note}, ${now})
            returning amount_cents
          )
          insert into credit_balances (user_id, balance_cents, updated_at)
          select ${userId}, amount_cents, ${now} from transfer
          on conflict (user_id) do update set balance_cents = credit_balances.balance_cents + excluded.balance_cents, updated_at = excluded.updated_at
          returning balance_cents`,
    );
    return { transferId, balanceCents: Number(row!.balance_cents) };
  }

  /** Out of a user's account into a system account; null (nothing written) when the balance is short. */
  async debit(executor: Executor, userId: string, to: string, amountCents: number, ref: TransferCauseRef, transferId: string, now: Date): Promise<Moved | null> {
    const r = refs(ref);
    const [row] = await rows<{ balance_cents: string | number }>(
      executor,
      sql`with moved as (
            update credit_balances set balance_cents = balance_cents - ${amountCents}, updated_at = ${now}
            where user_id = ${userId} and balance_cents >= ${amountCents}
            returning balance_cents
          ), transfer as (
            insert into credit_transfers (id, from_account, to_account, amount_cents, cause, agent_id, top_up_id, refund_of, note, created_at)
            select ${transferId}, ${userAccount(userId)}, ${to}, ${amountCents}, ${ref.cause}, ${r.agentId}, ${r.topUpId}, ${r.refundOf}, ${r.note}, ${now}
            where exists (select 1 from moved)
            returning id
          )
          select moved.balance_cents from moved, transfer`,
    );
    return row ? { transferId, balanceCents: Number(row.balance_cents) } : null;
  }

  /** The transfer that bought an agent, if any. */
  async purchaseOf(executor: Executor, agentId: string): Promise<{ id: string; userId: string; amountCents: number } | null> {
    const [row] = await rows<{ id: string; from_account: string; amount_cents: string | number }>(
      executor,
      sql`select id, from_account, amount_cents from credit_transfers where cause = 'agent_purchase' and agent_id = ${agentId}`,
    );
    return row ? { id: row.id, userId: row.from_account.slice('user:'.length), amountCents: Number(row.amount_cents) } : null;
  }

  /** Σ in − Σ out over the transfers: what the kept balance must equal (tests and audits). */
  async ledgerBalance(account: string): Promise<number> {
    const [row] = await rows<{ balance: string | number }>(
      this.db,
      sql`select coalesce(sum(case when to_account = ${account} then amount_cents else -amount_cents end), 0) as balance
          from credit_transfers where to_account = ${account} or from_account = ${account}`,
    );
    return Number(row!.balance);
  }

  async transfersOf(account: string) {
    return rows<{ id: string; from_account: string; to_account: string; amount_cents: string | number; cause: TransferCause; agent_id: string | null; top_up_id: string | null; refund_of: string | null; note: string | null }>(
      this.db,
      sql`select id, from_account, to_account, amount_cents, cause, agent_id, top_up_id, refund_of, note
          from credit_transfers where to_account = ${account} or from_account = ${account} order by created_at, id`,
    );
  }

  /**
   * A page of a user's ledger, newest first (created_at desc, id desc), each row with the balance right
   * after it: a running sum over all of the user's transfers in (created_at, id) order, computed before the
   * page is cut, so every page agrees with the one before it and the newest row with the kept balance.
   * `before` is a row id of this user's ledger: rows strictly older than it. A `before` that is not one of
   * the user's rows matches nothing (the row comparison with no cursor is null), so the page is empty.
   */
  async ledgerPage(userId: string, limit: number, before: string | null): Promise<LedgerRow[]> {
    const account = userAccount(userId);
    const found = await rows<{ id: string; amount_cents: string | number; balance_after: string | number; cause: TransferCause; agent_id: string | null; top_up_id: string | null; refund_of: string | null; created_at: Timestamp }>(
      this.db,
      sql`with mine as (
            select id, created_at, cause, agent_id, top_up_id, refund_of,
                   case when to_account = ${account} then amount_cents else -amount_cents end as amount_cents
            from credit_transfers where to_account = ${account} or from_account = ${account}
          ), ledger as (
            select *, sum(amount_cents) over (order by created_at, id rows between unbounded preceding and current row) as balance_after
            from mine
          )
          select id, amount_cents, balance_after, cause, agent_id, top_up_id, refund_of, created_at from ledger
          ${before ? sql`where (created_at, id) < (select created_at, id from mine where id = ${before})` : sql``}
          order by created_at desc, id desc
          limit ${limit}`,
    );
    return found.map((row) => ({
      id: row.id,
      amountCents: Number(row.amount_cents),
      balanceAfterCents: Number(row.balance_after),
      cause: row.cause,
      agentId: row.agent_id,
      topUpId: row.top_up_id,
      refundOf: row.refund_of,
      createdAt: toDate(row.created_at),
    }));
  }

  /** Whether `transferId` moved money into or out of the user's account. */
  async isLedgerEntryOf(userId: string, transferId: string): Promise<boolean> {
    const account = userAccount(userId);
    const [row] = await rows<{ id: string }>(this.db, sql`select id from credit_transfers where id = ${transferId} and (to_account = ${account} or from_account = ${account})`);
    return row !== undefined;
  }

  // Top-ups: claimed `settling` before the settle; each move below names the state it expects.

  /** The claim of one authorization; null when that authorization already has a top-up. */
  async claimTopUp(row: Omit<TopUpRow, 'status' | 'transactionHash' | 'failure'>): Promise<TopUpRow | null> {
    const [created] = await this.db
      .insert(creditTopUps)
      .values({ ...row, status: 'settling', transactionHash: null, failure: null })
      .onConflictDoNothing({ target: [creditTopUps.network, creditTopUps.asset, creditTopUps.payer, creditTopUps.nonce] })
      .returning();
    return created ?? null;
  }

  async topUpByAuthorization(network: string, asset: string, payer: string, nonce: string): Promise<TopUpRow | null> {
    const [row] = await this.db
      .select()
      .from(creditTopUps)
      .where(and(eq(creditTopUps.network, network), eq(creditTopUps.asset, asset), eq(creditTopUps.payer, payer), eq(creditTopUps.nonce, nonce)));
    return row ?? null;
  }

  async topUpById(id: string): Promise<TopUpRow | null> {
    const [row] = await this.db.select().from(creditTopUps).where(eq(creditTopUps.id, id));
    return row ?? null;
  }

  /** settling → settled with its transaction, in the caller's transaction (with the credit). */
  async markTopUpSettled(executor: Executor, id: string, transactionHash: string, now: Date): Promise<boolean> {
    const moved = await executor
      .update(creditTopUps)
      .set({ status: 'settled', transactionHash, updatedAt: now })
      .where(and(eq(creditTopUps.id, id), eq(creditTopUps.status, 'settling')))
      .returning({ id: creditTopUps.id });
    return moved.length === 1;
  }

  /** settling → failed: nothing moved and nothing can (refused, or the authorization expired unused). */
  async markTopUpFailed(id: string, failure: string, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(creditTopUps)
      .set({ status: 'failed', failure, updatedAt: now })
      .where(and(eq(creditTopUps.id, id), eq(creditTopUps.status, 'settling')))
      .returning({ id: creditTopUps.id });
    return moved.length === 1;
  }

  /** A claim whose settle never reached the facilitator: gone, so the same authorization can be sent again. */
  async releaseTopUp(id: string): Promise<void> {
    await this.db.delete(creditTopUps).where(and(eq(creditTopUps.id, id), eq(creditTopUps.status, 'settling')));
  }

  /** Top-ups left settling (unknown outcome, or a crash) since before `olderThan`, oldest first. */
  async settlingTopUps(olderThan: Date, limit: number): Promise<TopUpRow[]> {
    return this.db
      .select()
      .from(creditTopUps)
      .where(and(eq(creditTopUps.status, 'settling'), lt(creditTopUps.updatedAt, olderThan)))
      .orderBy(asc(creditTopUps.updatedAt))
      .limit(limit);
  }
}
