import type { AppContext } from '../../context.js';
import type { AnswerRecorder } from '../../platform/idempotency.js';
import { newId } from '../../platform/ids.js';
import { AGENT_PRICE_CENTS, type AgentView, type ListedAgentView, type Purchase, type RuntimeInstanceView } from './schemas.js';
import type { AgentType } from './tables.js';
import { AgentsStore, type AgentRow } from './store.js';
import { agentView, instanceView } from './views.js';

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

  async list(userId: string): Promise<Array<AgentView & { runtimeInstance: RuntimeInstanceView | null }>> {
    return (await this.store.listByUser(userId)).map(({ agent, instance }) => ({ ...agentView(agent), runtimeInstance: instance && instanceView(instance) }));
  }

  /** One agent as the list shows it (the caller's own: the route found it). */
  async view(agent: AgentRow): Promise<ListedAgentView> {
    const instance = await this.store.instanceOf(agent.id);
    return { ...agentView(agent), runtimeInstance: instance && instanceView(instance) };
  }

  /** `record`: writes the answer in the purchase's own transaction (an Idempotency-Key's record: platform/idempotency.ts). */
  async create(userId: string, input: { name: string; type: AgentType }, record?: AnswerRecorder<Purchase>) {
    const credits = this.ctx.services.credits;
    const id = newId();
    const now = this.ctx.clock.now();
    return this.ctx.db.transaction(async (tx) => {
      const paid = await credits.spendOnAgent(tx, userId, AGENT_PRICE_CENTS, id);
      const agent = await this.store.insert(tx, { id, userId, name: input.name, type: input.type, spec: 'monthly', status: 'pending', attempts: 0, lastError: null, nextAttemptAt: now, createdAt: now, updatedAt: now });
      // The agent as GET /agents/{agentId} shows it (no runtime yet), as a renewal answers it too.
      const purchase: Purchase = { agent: { ...agentView(agent), runtimeInstance: null }, charge: { amountUsdCents: AGENT_PRICE_CENTS, balanceAfterUsdCents: paid.balanceCents } };
      await record?.(tx, purchase);
      return purchase;
    });
  }
}
