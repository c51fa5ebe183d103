import type { AppContext } from '../../context.js';
import { maskKey } from '../../platform/model-providers.js';
import type { AgentSecrets } from './agent-secrets.js';
import type { ChatStore } from './chat-store.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import { agentsErrors } from './errors.js';
import { PROBE_TIMEOUT_MS, type RuntimeClient, type RuntimeTokenDay } from './runtime-client.js';
import type { BudgetView, ConfigBody, ConfigView, ProviderEntry } from './schemas.js';
import type { AgentRow, AgentsStore } from './store.js';
import type { ModelProvider } from './tables.js';

const utcDay = (now: Date) => now.toISOString().slice(0, 10);

/**
 * What a user reads and sets on an agent: its configuration (models, bot settings), its model-provider keys,
 * its budgets and its usage. Every call first finds the agent among the caller's own (another user's, or a
 * deleted one, is 404).
 */
export class AgentOperations {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly chats: ChatStore,
    private readonly secrets: AgentSecrets,
    private readonly runtime: RuntimeClient,
  ) {}

  async owned(userId: string, agentId: string): Promise<AgentRow> {
    const agent = await this.store.byId(agentId);
    if (!agent || agent.userId !== userId || agent.status === 'deleted') throw agentsErrors.notFound();
    return agent;
  }

  /** Kept by the service, so it reads and changes in any state; a turn uses what is set when it starts. */
  config = async (agent: AgentRow): Promise<ConfigView> => {
    const instance = await this.store.instanceOf(agent.id);
    return { id: agent.id, instanceId: instance?.id ?? null, createdAt: agent.createdAt.toISOString(), updatedAt: agent.updatedAt.toISOString(), models: agent.models, botSettings: agent.botSettings };
  };

  async setConfig(agent: AgentRow, body: ConfigBody): Promise<ConfigView> {
    const updated = await this.store.setConfig(agent.id, body, this.ctx.clock.now());
    return this.config(updated!);
  }

  async setProvider(agent: AgentRow, provider: ModelProvider, apiKey: string): Promise<ProviderEntry> {
    const now = this.ctx.clock.now();
    await this.store.saveProviderKey({ agentId: agent.id, provider, sealedKey: this.secrets.sealProviderKey(agent.id, provider, apiKey), keyHint: maskKey(apiKey), createdAt: now, updatedAt: now });
    return { provider, apiKey: maskKey(apiKey) };
  }

  /** Removes a provider's key: the one set last of those left answers the next turn. */
  async deleteProvider(agent: AgentRow, provider: ModelProvider): Promise<{ provider: ModelProvider; deleted: true }> {
    if (!(await this.store.deleteProviderKey(agent.id, provider))) throw agentsErrors.providerNotFound(provider);
    return { provider, deleted: true };
  }

  async providers(agent: AgentRow): Promise<ProviderEntry[]> {
    return (await this.store.providerKeys(agent.id)).map((row) => ({ provider: row.provider, apiKey: row.keyHint }));
  }

  /** Both budgets: tokens (today's use from the running runtime) and runtime_b's payments, with its wallet. */
  async budget(agent: AgentRow): Promise<BudgetView> {
    return this.#withPayments(agent, await this.#tokenDay(agent, { method: 'GET', path: '/budget' }));
  }

  /**
   * The token budget is stored for every later start and handed to the running runtime at once; the payment
   * budget cannot go below what was already spent or is held.
   */
  async setBudget(agent: AgentRow, input: { dailyTokens?: number; paymentBudget?: string }): Promise<BudgetView> {
    const now = this.ctx.clock.now();
    if (input.paymentBudget !== undefined && !(await this.store.setPaymentBudget(agent.id, BigInt(input.paymentBudget), now))) throw agentsErrors.budgetBelowSpent(agent.paymentSpent);
    if (input.dailyTokens !== undefined) await this.store.setTokenBudget(agent.id, input.dailyTokens, now);
    const updated = (await this.store.byId(agent.id))!;
    const request = input.dailyTokens === undefined ? ({ method: 'GET', path: '/budget' } as const) : ({ method: 'PUT', path: '/budget', body: { dailyTokens: input.dailyTokens } } as const);
    return this.#withPayments(updated, await this.#tokenDay(updated, request));
  }

  /**
   * Tokens today and in all, and the tool's payments. The stored count mirrors the runtime's (each turn's
   * answer carries it, and a running runtime is asked here first), so it agrees with the budget's `usedToday`
   * even after a turn whose answer was lost (a crash): the runtime counted its calls on its volume.
   */
  async usage(agent: AgentRow) {
    const instance = agent.status === 'running' ? await this.store.instanceOf(agent.id) : null;
    if (instance) {
      await this.runtime
        .json<RuntimeTokenDay>(instance, { method: 'GET', path: '/budget', timeoutMs: PROBE_TIMEOUT_MS }, this.ctx.clock.now())
        .then((day) => this.#mirror(agent.id, day))
        .catch(() => {}); // a runtime restarting: the stored count as it is
    }
    const day = utcDay(this.ctx.clock.now());
    const [tokens, payments] = await Promise.all([this.chats.tokens(agent.id, day), this.store.paymentTotals(agent.id)]);
    return { tokens: { ...tokens, day }, payments };
  }

  async #mirror(agentId: string, day: RuntimeTokenDay): Promise<void> {
    if (typeof day.day === 'string' && Number.isInteger(day.usedToday)) await this.chats.mirrorTokens(agentId, { day: day.day, usedToday: day.usedToday });
  }

  async #tokenDay(agent: AgentRow, request: { method: 'GET' | 'PUT'; path: string; body?: unknown }): Promise<RuntimeTokenDay> {
    const instance = agent.status === 'running' ? await this.store.instanceOf(agent.id) : null;
    if (instance) {
      const day = await this.runtime.json<RuntimeTokenDay>(instance, request, this.ctx.clock.now());
      await this.#mirror(agent.id, day);
      return day;
    }
    const resetsAt = new Date(`${utcDay(this.ctx.clock.now())}T00:00:00.000Z`);
    resetsAt.setUTCDate(resetsAt.getUTCDate() + 1);
    return { dailyTokens: agent.dailyTokenBudget, usedToday: (await this.chats.tokens(agent.id, utcDay(this.ctx.clock.now()))).today, resetsAt: resetsAt.toISOString() };
  }

  async #withPayments(agent: AgentRow, tokens: RuntimeTokenDay): Promise<BudgetView> {
    const wallet = agent.walletId ? await this.ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId) : null;
    const { dailyTokens, usedToday, resetsAt } = tokens;
    return { dailyTokens, usedToday, resetsAt, paymentBudget: agent.paymentBudget, paymentSpent: agent.paymentSpent, wallet: wallet && { id: wallet.id, address: wallet.address } };
  }
}
