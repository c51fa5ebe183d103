import type { AppContext } from '../../context.js';
import type { Executor } from '../../platform/db.js';
import type { AnswerRecorder } from '../../platform/idempotency.js';
import type { ChatStore } from './chat-store.js';
import { agentsErrors } from './errors.js';
import { AGENT_PRICE_CENTS, type AgentExport, type ConfigView, type Renewal } from './schemas.js';
import type { AgentRow, AgentsStore } from './store.js';
import type { AgentSupervisor } from './supervisor.js';
import { agentView, instanceView } from './views.js';

/**
 * An agent's life as its user drives it. Each move is one conditional statement on the agent's status (the
 * database decides between a user and the supervisor's sweep); the runtime follows: a stop or delete halts
 * it at once when this node runs the worker role (where local runtimes live), else the worker's next sweep
 * does; a start or a renewal of an expired agent queues its deployment on its volume.
 */
export class AgentLifecycle {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly chats: ChatStore,
    private readonly supervisor: AgentSupervisor,
    private readonly config: (agent: AgentRow) => Promise<ConfigView>,
    private readonly holdsMoney: (agent: AgentRow) => Promise<boolean>,
  ) {}

  /** running → stopped: no charge back (the month was bought); start again while it lasts. */
  async stop(agent: AgentRow) {
    if (!(await this.store.markStopped(agent.id, this.ctx.clock.now()))) throw agentsErrors.cannot('stop', agent.status, 'only a running agent can be stopped');
    this.#haltHere(agent.id);
    return this.#view(agent.id);
  }

  /** stopped → pending: deployed again on its volume, inside its paid month. */
  async start(agent: AgentRow) {
    if (!(await this.store.markStarting(agent.id, this.ctx.clock.now()))) {
      throw agentsErrors.cannot('start', agent.status, agent.status === 'stopped' ? 'its paid month is over: renew it first' : 'only a stopped agent can be started');
    }
    return this.#view(agent.id);
  }

  /**
   * One more month for 1000 credit cents, the charge and the new expiry in one transaction (402 when short).
   * `record`: writes the answer in the renewal's own transaction (an Idempotency-Key's record: platform/idempotency.ts).
   */
  async renew(userId: string, agent: AgentRow, record?: AnswerRecorder<Renewal>) {
    const now = this.ctx.clock.now();
    const renewed = await this.ctx.db.transaction(async (tx) => {
      const expiresAt = await this.store.renew(tx, agent.id, now);
      if (!expiresAt) return null;
      const paid = await this.ctx.services.credits.spendOnRenewal(tx, userId, AGENT_PRICE_CENTS, agent.id);
      // The same shape as a purchase's answer: { agent, charge }.
      const renewal: Renewal = { agent: await this.#view(agent.id, tx), charge: { amountUsdCents: AGENT_PRICE_CENTS, balanceAfterUsdCents: paid.balanceCents } };
      await record?.(tx, renewal);
      return renewal;
    });
    if (!renewed) throw agentsErrors.cannot('renew', agent.status, 'only a deployed agent whose data is kept can be renewed');
    return renewed;
  }

  /**
   * Gone from lists at once; its runtime halted and its volume removed with its histories (no refund). Not
   * while a runtime_b wallet holds USDG or a payment in flight: withdraw first (a deleted agent has no routes).
   */
  async delete(agent: AgentRow): Promise<void> {
    if (await this.holdsMoney(agent)) throw agentsErrors.walletNotEmpty();
    if (!(await this.store.markDeleted(agent.id, this.ctx.clock.now()))) throw agentsErrors.notFound();
    this.#haltHere(agent.id);
  }

  /** The agent, its configuration and every session's transcript, while its data is kept. */
  async export(agent: AgentRow): Promise<AgentExport> {
    const instance = await this.store.instanceOf(agent.id);
    if (instance?.removedAt) throw agentsErrors.dataRemoved(instance.removedAt);
    const [config, sessions] = await Promise.all([this.config(agent), this.chats.sessions(agent.id)]);
    return {
      agent: { ...agentView(agent), runtimeInstance: instance && instanceView(instance) },
      config,
      sessions: await Promise.all(
        sessions.map(async (summary) => ({ session: summary.session, updatedAt: summary.updatedAt.toISOString(), entries: await this.chats.entries(agent.id, summary.session) })),
      ),
      exportedAt: this.ctx.clock.now().toISOString(),
    };
  }

  /** Halts the runtime now when this node can (a provider's stop may take a while: the answer does not wait). */
  #haltHere(agentId: string): void {
    if (!this.ctx.roles.includes('worker')) return;
    void (async () => {
      const instance = await this.store.instanceOf(agentId);
      if (instance?.stoppedAt && !instance.haltedAt) await this.supervisor.halt(instance);
    })().catch((error: unknown) => this.ctx.log.warn({ err: error, agentId }, 'agent runtime halt failed; the supervisor will'));
  }

  async #view(agentId: string, db?: Executor) {
    // In a transaction, one statement at a time (PGlite's one connection).
    const agent = await this.store.byId(agentId, db);
    const instance = await this.store.instanceOf(agentId, db);
    return { ...agentView(agent!), runtimeInstance: instance && instanceView(instance) };
  }
}
