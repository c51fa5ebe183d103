import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import { AGENT_PRICE_CENTS, type AgentView } from './schemas.js';
import type { AgentType } from './tables.js';
import { AgentsStore } from './store.js';
import { agentView } from './views.js';

/**
 * Hosted agents. Creating one buys a month of runtime: the agent row and its payment from the user's
 * credits are one transaction, so a short balance leaves neither, and concurrent creates can never spend
 * more than the balance (the debit's conditional UPDATE and the balance CHECK, credits/store.ts).
 */
export class AgentsService {
  readonly store: AgentsStore;

  constructor(private readonly ctx: AppContext) {
    this.store = new AgentsStore(ctx.db);
  }

  async list(userId: string): Promise<Array<AgentView & { runtimeInstance: null }>> {
    // Runtimes are not deployed yet (issue 15): every agent is listed without an instance.
    return (await this.store.listByUser(userId)).map((row) => ({ ...agentView(row), runtimeInstance: null }));
  }

  async create(userId: string, input: { name: string; type: AgentType }) {
    const credits = this.ctx.services.credits;
    const id = newId();
    const now = this.ctx.clock.now();
    const created = await this.ctx.db.transaction(async (tx) => {
      const paid = await credits.spendOnAgent(tx, userId, AGENT_PRICE_CENTS, id);
      const agent = await this.store.insert(tx, { id, userId, name: input.name, type: input.type, spec: 'monthly', status: 'pending', attempts: 0, lastError: null, createdAt: now, updatedAt: now });
      return { agent, balanceAfter: paid.balanceCents };
    });
    return { agent: agentView(created.agent), charge: { amountUsdCents: AGENT_PRICE_CENTS, balanceAfterUsdCents: created.balanceAfter } };
  }
}
