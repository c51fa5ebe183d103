import type { AppContext } from '../../context.js';
import type { AgentSecrets } from './agent-secrets.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import { agentsErrors } from './errors.js';
import type { BudgetView, ChatBody, ChatHistory, ChatResult, ProviderEntry, RuntimeConfigView } from './schemas.js';
import type { AgentRow, AgentsStore } from './store.js';
import type { ModelProvider } from './tables.js';

/** The start and end of a key, the rest hidden: enough to tell keys apart, never enough to use one. */
export function maskKey(key: string): string {
  if (key.length <= 8) return '…';
  return `${key.slice(0, 4)}…${key.slice(-4)}`;
}

const RUNTIME_TIMEOUT_MS = 90_000;

/**
 * What a user does with an agent: its runtime's configuration, its model-provider keys, chat and history.
 * Every call first finds the agent among the caller's own (another user's is 404), then reaches the runtime
 * at its instance's address with its token (both from the database, so any api node can); the runtime calls
 * the model provider and keeps the history.
 */
type TokenBudgetView = Pick<BudgetView, 'dailyTokens' | 'usedToday' | 'resetsAt'>;

export class AgentOperations {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly secrets: AgentSecrets,
  ) {}

  async config(userId: string, agentId: string): Promise<RuntimeConfigView> {
    return (await this.#runtime(await this.#owned(userId, agentId), 'GET', '/config')) as RuntimeConfigView;
  }

  async setProvider(userId: string, agentId: string, provider: ModelProvider, apiKey: string): Promise<ProviderEntry> {
    await this.#owned(userId, agentId);
    const now = this.ctx.clock.now();
    await this.store.saveProviderKey({ agentId, provider, sealedKey: this.secrets.sealProviderKey(agentId, provider, apiKey), keyHint: maskKey(apiKey), createdAt: now, updatedAt: now });
    return { provider, apiKey: maskKey(apiKey) };
  }

  async providers(userId: string, agentId: string): Promise<ProviderEntry[]> {
    await this.#owned(userId, agentId);
    return (await this.store.providerKeys(agentId)).map((row) => ({ provider: row.provider, apiKey: row.keyHint }));
  }

  async chat(userId: string, agentId: string, body: ChatBody): Promise<ChatResult> {
    const agent = await this.#owned(userId, agentId);
    const [key] = await this.store.providerKeys(agentId);
    if (!key) throw agentsErrors.providerNotConfigured();
    const provider = { name: key.provider, apiKey: this.secrets.openProviderKey(agentId, key.provider, key.sealedKey), baseUrl: this.ctx.config.agentProviders[key.provider] };
    const answer = (await this.#runtime(agent, 'POST', '/chat', { session: body.session, messages: body.messages, provider })) as ChatResult;
    return { message: answer.message, raw: answer.raw, text: answer.text };
  }

  /** Both budgets: tokens (today's use from the running runtime) and runtime_b's payments, with its wallet. */
  async budget(userId: string, agentId: string): Promise<BudgetView> {
    const agent = await this.#owned(userId, agentId);
    const tokens = agent.status === 'running' ? ((await this.#runtime(agent, 'GET', '/budget')) as TokenBudgetView) : this.#idleTokens(agent);
    return this.#withPayments(agent, tokens);
  }

  /**
   * The token budget is stored for every later start and handed to the running runtime at once; the payment
   * budget cannot go below what was already spent.
   */
  async setBudget(userId: string, agentId: string, input: { dailyTokens?: number; paymentBudget?: string }): Promise<BudgetView> {
    let agent = await this.#owned(userId, agentId);
    const now = this.ctx.clock.now();
    if (input.paymentBudget !== undefined && !(await this.store.setPaymentBudget(agentId, BigInt(input.paymentBudget), now))) throw agentsErrors.budgetBelowSpent(agent.paymentSpent);
    if (input.dailyTokens !== undefined) await this.store.setTokenBudget(agentId, input.dailyTokens, now);
    agent = (await this.store.byId(agentId))!;
    const tokens =
      agent.status !== 'running'
        ? this.#idleTokens(agent)
        : ((await this.#runtime(agent, input.dailyTokens === undefined ? 'GET' : 'PUT', '/budget', input.dailyTokens === undefined ? undefined : { dailyTokens: input.dailyTokens })) as TokenBudgetView);
    return this.#withPayments(agent, tokens);
  }

  #idleTokens(agent: AgentRow): TokenBudgetView {
    return { dailyTokens: agent.dailyTokenBudget, usedToday: 0, resetsAt: nextUtcDay(this.ctx.clock.now()) };
  }

  async #withPayments(agent: AgentRow, tokens: TokenBudgetView): Promise<BudgetView> {
    const wallet = agent.walletId ? await this.ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId) : null;
    return { ...tokens, paymentBudget: agent.paymentBudget, paymentSpent: agent.paymentSpent, wallet: wallet && { id: wallet.id, address: wallet.address } };
  }

  async history(userId: string, agentId: string, session: string): Promise<ChatHistory> {
    return (await this.#runtime(await this.#owned(userId, agentId), 'GET', `/history?session=${encodeURIComponent(session)}`)) as ChatHistory;
  }

  async #owned(userId: string, agentId: string): Promise<AgentRow> {
    const agent = await this.store.byId(agentId);
    if (!agent || agent.userId !== userId) throw agentsErrors.notFound();
    return agent;
  }

  async #runtime(agent: AgentRow, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<unknown> {
    if (agent.status !== 'running') throw agentsErrors.notRunning(agent.status);
    const instance = await this.store.instanceOf(agent.id);
    if (!instance) throw agentsErrors.runtimeUnavailable();
    const connection = { url: instance.url, token: this.secrets.open(instance.id, instance.sealedToken) };
    let response: Response;
    try {
      response = await fetch(`${connection.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${connection.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(RUNTIME_TIMEOUT_MS),
      });
    } catch {
      throw agentsErrors.runtimeUnavailable();
    }
    const answer = (await response.json().catch(() => null)) as ({ error?: string; providerStatus?: number | null } & Partial<BudgetView>) | null;
    if (response.status === 429 && answer) throw agentsErrors.tokenBudgetExhausted(answer as TokenBudgetView, this.ctx.clock.now());
    if (response.status === 502) throw agentsErrors.providerFailed(answer?.error ?? 'the model provider failed', answer?.providerStatus ?? null);
    if (!response.ok || answer === null) {
      this.ctx.log.warn({ agentId: agent.id, status: response.status, error: answer?.error }, 'agent runtime answered with an error');
      throw agentsErrors.runtimeUnavailable();
    }
    return answer;
  }
}

function nextUtcDay(now: Date): string {
  const next = new Date(`${now.toISOString().slice(0, 10)}T00:00:00.000Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString();
}
