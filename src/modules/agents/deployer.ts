import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { RUNTIME_RESOURCES, type DeployedRuntime, type InstanceRef, type RuntimeProvider } from './runtime-provider.js';
import type { RuntimeTokens } from './agent-secrets.js';
import type { AgentRow, AgentsStore, InstanceRow } from './store.js';

/** The wallets of runtime_b agents belong to this application (no management credential has its id, so no API caller sees them). */
export const AGENTS_WALLET_OWNER = '00000000-0000-7000-8000-a6e475000000';

/** Deployment tries per agent before it fails (and is refunded), and the wait between them. */
export const DEPLOY_ATTEMPTS = 5;
export const DEPLOY_RETRY_MS = 30_000;
/** A runtime runs one month from its first start; its volume is removed a week after it stops. */
export const RUNTIME_LIFETIME_MS = 30 * 24 * 3600_000;
export const REMOVE_AFTER_MS = 7 * 24 * 3600_000;

const refOf = (instance: InstanceRow): InstanceRef => ({ agentId: instance.agentId, appName: instance.appName, volumeRef: instance.volumeRef, machineRef: instance.machineRef });
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The worker's side of agents: deploys bought agents through the runtime provider (retrying, then failing
 * with a refund), restarts runtimes that stopped (after a service restart) on their own volumes, stops them
 * when their month ends and removes their volumes a week later.
 */
export class AgentDeployer {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly provider: RuntimeProvider,
    private readonly tokens: RuntimeTokens,
  ) {}

  /** Deploys due agents, one at a time, at most `limit`; returns how many it tried. */
  async deployDue(limit = 5): Promise<number> {
    let deployed = 0;
    for (let i = 0; i < limit; i += 1) {
      const agent = await this.store.claimDue(this.ctx.clock.now(), DEPLOY_RETRY_MS);
      if (!agent) break;
      await this.deploy(agent);
      deployed += 1;
    }
    return deployed;
  }

  private async deploy(agent: AgentRow): Promise<void> {
    // A redeploy adopts the volume the agent already has; the instance keeps its id, start and expiry.
    const existing = await this.store.instanceOf(agent.id);
    const instanceId = existing?.id ?? newId();
    const appName = existing?.appName ?? `agent-${agent.id.slice(0, 8)}-${agent.id.slice(-12)}`;
    try {
      if (agent.type === 'runtime_b' && !agent.walletId) await this.#giveWallet(agent);
      const started = await this.provider.deploy({ ...this.#specOf(agent), instanceId, appName, volumeRef: existing?.volumeRef ?? null });
      const now = this.ctx.clock.now();
      const instance: InstanceRow = existing
        ? { ...existing, ...this.#reachedAt(instanceId, started), updatedAt: now }
        : {
            id: instanceId,
            agentId: agent.id,
            provider: this.provider.name,
            appName,
            ...RUNTIME_RESOURCES,
            ...this.#reachedAt(instanceId, started),
            startedAt: now,
            expiresAt: new Date(now.getTime() + RUNTIME_LIFETIME_MS),
            stoppedAt: null,
            removedAt: null,
            createdAt: now,
            updatedAt: now,
          };
      await this.ctx.db.transaction((tx) => this.store.markRunning(tx, agent.id, instance, now));
    } catch (error) {
      const giveUp = agent.attempts >= DEPLOY_ATTEMPTS;
      this.ctx.log.warn({ err: error, agentId: agent.id, attempt: agent.attempts, giveUp }, 'agent deployment failed');
      // The last failure and the refund commit together: a failed agent is always a refunded one.
      await this.ctx.db.transaction(async (tx) => {
        const moved = await this.store.recordFailure(tx, agent.id, message(error), giveUp, this.ctx.clock.now());
        if (moved && giveUp) await this.ctx.services.credits.refundAgentPurchase(tx, agent.id);
      });
    }
  }

  /** runtime_b pays from a wallet of its own: made once (idempotent by the agent's id), owned by the agents application. */
  async #giveWallet(agent: AgentRow): Promise<void> {
    const created = await this.ctx.services.wallets.create(AGENTS_WALLET_OWNER, { externalId: agent.id, name: `agent ${agent.name}`.slice(0, 200), chainType: 'ethereum' });
    const credentialId = created.credential?.id ?? (await this.ctx.services.wallets.listCredentials(AGENTS_WALLET_OWNER, created.wallet.id))[0]?.id;
    if (!credentialId) throw new Error(`wallet ${created.wallet.id} of agent ${agent.id} has no credential`);
    await this.store.setWallet(agent.id, created.wallet.id, credentialId, this.ctx.clock.now());
  }

  #specOf(agent: AgentRow) {
    return { agentId: agent.id, type: agent.type, ...RUNTIME_RESOURCES, dailyTokenBudget: agent.dailyTokenBudget, serviceUrl: this.ctx.urls.api };
  }

  /** Where a (re)started runtime answers, its handles, and its new token, sealed. */
  #reachedAt(instanceId: string, started: DeployedRuntime) {
    return { url: started.url, volumeRef: started.volumeRef, machineRef: started.machineRef, sealedToken: this.tokens.seal(instanceId, started.token) };
  }

  /** Running agents: stopped at the end of their month, restarted on their volume when not answering. */
  async sweepRunning(limit = 100): Promise<void> {
    const now = this.ctx.clock.now();
    for (const { agent, instance } of await this.store.running(limit)) {
      try {
        if (instance.expiresAt && instance.expiresAt <= now) {
          await this.provider.stop(refOf(instance));
          await this.store.markExpired(agent.id, now);
        } else if (!(await this.provider.isRunning(refOf(instance)))) {
          const started = await this.provider.deploy({ ...this.#specOf(agent), instanceId: instance.id, appName: instance.appName, volumeRef: instance.volumeRef });
          await this.store.saveInstance(this.ctx.db, { ...instance, ...this.#reachedAt(instance.id, started), updatedAt: this.ctx.clock.now() });
        }
      } catch (error) {
        this.ctx.log.warn({ err: error, agentId: agent.id }, 'agent runtime sweep failed');
      }
    }
    for (const instance of await this.store.dueForRemoval(new Date(now.getTime() - REMOVE_AFTER_MS), limit)) {
      await this.provider.remove(refOf(instance));
      await this.store.markRemoved(instance.id, this.ctx.clock.now());
    }
  }
}

export function agentLoops(deployer: AgentDeployer): BackgroundLoop[] {
  return [
    { name: 'agents.deploy', intervalMs: 1_000, leader: true, run: async () => (await deployer.deployDue()) === 5 },
    { name: 'agents.runtimes', intervalMs: 10_000, leader: true, run: async () => void (await deployer.sweepRunning()) },
  ];
}
