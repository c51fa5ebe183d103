import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import { badRequest } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { creditsErrors } from './errors.js';
import { MAX_GRANT_CENTS } from './schemas.js';
import { CreditsStore, SYSTEM_ACCOUNTS, type Moved } from './store.js';

/**
 * Credits of signed-in users, in US cents. Other modules spend through spend(), inside their own
 * transaction, so what they buy and its payment commit together or not at all.
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
  async spendOnAgent(executor: Executor, userId: string, cents: number, agentId: string): Promise<Moved> {
    const moved = await this.store.debit(executor, userId, SYSTEM_ACCOUNTS.agents, cents, { cause: 'agent_purchase', agentId }, newId(), this.ctx.clock.now());
    if (!moved) throw creditsErrors.insufficientBalance(await this.store.balance(userId, executor), cents);
    return moved;
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
