import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import { badRequest } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { creditsErrors } from './errors.js';
import { MAX_GRANT_CENTS, type LedgerEntryView } from './schemas.js';
import { CreditsStore, SYSTEM_ACCOUNTS, type LedgerRow, type Moved, type TransferCauseRef } from './store.js';

/**
 * Credits of signed-in users, in US cents. Other modules spend through spendOnAgent() and spendOnRenewal(),
 * inside their own transaction, so what they buy and its payment commit together or not at all.
 */
export class CreditsService {
  readonly store: CreditsStore;

  constructor(private readonly ctx: AppContext) {
    this.store = new CreditsStore(ctx.db);
  }

  balance(userId: string): Promise<number> {
    return this.store.balance(userId);
  }

  /** Operator grant (CLI): from the grants account, with a note saying why. */
  async grant(userId: string, cents: number, note: string): Promise<Moved> {
    if (!userId) throw badRequest('a user (--sub) is required');
    if (!Number.isInteger(cents) || cents < 1 || cents > MAX_GRANT_CENTS) throw badRequest(`cents must be a whole number from 1 to ${MAX_GRANT_CENTS}`);
    return this.store.credit(this.ctx.db, userId, SYSTEM_ACCOUNTS.grants, cents, { cause: 'grant', note }, newId(), this.ctx.clock.now());
  }

  /**
   * Pays for an agent from the user's credits, inside the caller's transaction. Throws 402
   * insufficient_balance when the balance is short, which rolls the caller's transaction back too.
   */
  spendOnAgent(executor: Executor, userId: string, cents: number, agentId: string): Promise<Moved> {
    return this.spend(executor, userId, cents, { cause: 'agent_purchase', agentId });
  }

  /**
   * Pays for another period of an agent, like spendOnAgent (same account, same 402, inside the caller's
   * transaction). An agent may be renewed any number of times: nothing makes a renewal unique, so the
   * caller's own state change (e.g. moving the agent's expiry from the value it read) must be what lets
   * one renewal through.
   */
  spendOnRenewal(executor: Executor, userId: string, cents: number, agentId: string): Promise<Moved> {
    return this.spend(executor, userId, cents, { cause: 'agent_renewal', agentId });
  }

  private async spend(executor: Executor, userId: string, cents: number, ref: TransferCauseRef): Promise<Moved> {
    const moved = await this.store.debit(executor, userId, SYSTEM_ACCOUNTS.agents, cents, ref, newId(), this.ctx.clock.now());
    if (!moved) throw creditsErrors.insufficientBalance(await this.store.balance(userId, executor), cents);
    return moved;
  }

  /**
   * GET /credits/ledger: the user's entries, newest first. A `before` that is not one of the user's entries
   * (unknown, or another user's) is refused rather than answered as an empty last page, which a client
   * would take for the end of its history. The store's page is empty for such a cursor, so only an empty
   * page is worth the second look.
   */
  async ledger(userId: string, limit: number, before: string | null): Promise<LedgerEntryView[]> {
    const rows = await this.store.ledgerPage(userId, limit, before);
    if (before && rows.length === 0 && !(await this.store.isLedgerEntryOf(userId, before))) throw creditsErrors.unknownLedgerCursor(before);
    return rows.map(ledgerEntryView);
  }

  /**
   * Gives back what an agent cost (its deployment failed for good), inside the caller's transaction. Once:
   * a refund is unique per refunded transfer, so a second call fails and rolls the caller back.
   */
  async refundAgentPurchase(executor: Executor, agentId: string): Promise<Moved | null> {
    const purchase = await this.store.purchaseOf(executor, agentId);
    if (!purchase) return null;
    const ref = { cause: 'refund' as const, refundOf: purchase.id, agentId };
    return this.store.credit(executor, purchase.userId, SYSTEM_ACCOUNTS.agents, purchase.amountCents, ref, newId(), this.ctx.clock.now());
  }
}

/** A ledger row as the API shows it; a grant's note is the operator's and stays out (docs/agents.md). */
export function ledgerEntryView(row: LedgerRow): LedgerEntryView {
  return {
    id: row.id,
    amountUsdCents: row.amountCents,
    balanceAfterUsdCents: row.balanceAfterCents,
    cause: causeOf(row),
    createdAt: row.createdAt.toISOString(),
  };
}

function causeOf(row: LedgerRow): LedgerEntryView['cause'] {
  switch (row.cause) {
    case 'agent_purchase':
      return { kind: 'purchase', id: row.agentId };
    case 'agent_renewal':
      return { kind: 'renewal', id: row.agentId };
    case 'top_up':
      return { kind: 'top_up', id: row.topUpId };
    case 'refund':
      return { kind: 'refund', id: row.refundOf };
    case 'grant':
      return { kind: 'grant', id: null };
  }
}
