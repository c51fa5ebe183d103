import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import { RUNTIME_RESOURCES, VolumeLostError, type DeployedRuntime, type InstanceRef, type RuntimeProvider, type RuntimeSpec } from './runtime-provider.js';
import type { RuntimeTokens } from './agent-secrets.js';
import { RUNTIME_LIFETIME_MS, type AgentRow, type AgentsStore, type InstanceRow } from './store.js';

/** The wallets of runtime_b agents belong to this application (no management credential has its id, so no API caller sees them). */
export const AGENTS_WALLET_OWNER = '00000000-0000-7000-8000-a6e475000000';

/** Deployment tries per agent before it gives up, and the wait between them. */
export const DEPLOY_ATTEMPTS = 5;
export const DEPLOY_RETRY_MS = 30_000;

export const refOf = (instance: InstanceRow): InstanceRef => ({ agentId: instance.agentId, appName: instance.appName, volumeRef: instance.volumeRef, machineRef: instance.machineRef });

/**
 * The worker's side of agents: deploys pending agents through the runtime provider (bought ones, started
 * ones, renewed expired ones), retrying. A purchase whose deployment gives up fails with a refund; a restart
 * that gives up leaves the agent stopped (its month was used); a volume that is gone leaves it volume_lost.
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
      const started = await this.provider.deploy(this.specOf(agent, instanceId, appName, existing?.volumeRef ?? null));
      const now = this.ctx.clock.now();
      const instance: InstanceRow = existing
        ? { ...existing, ...this.reachedAt(instanceId, started), updatedAt: now }
        : {
            id: instanceId,
            agentId: agent.id,
            provider: this.provider.name,
            appName,
            ...RUNTIME_RESOURCES,
            ...this.reachedAt(instanceId, started),
            startedAt: now,
            expiresAt: new Date(now.getTime() + RUNTIME_LIFETIME_MS),
            stoppedAt: null,
            removedAt: null,
            removeAt: null,
            haltedAt: null,
            createdAt: now,
            updatedAt: now,
          };
      if (!(await this.store.markRunning(agent.id, instance, now))) {
        // Deleted while it was being deployed: what was started goes too.
        const ref = { agentId: agent.id, appName, volumeRef: started.volumeRef, machineRef: started.machineRef };
        await (existing ? this.provider.stop(ref) : this.provider.remove(ref));
      }
    } catch (error) {
      if (error instanceof VolumeLostError) {
        this.ctx.log.error({ agentId: agent.id, err: error }, 'agent volume lost');
        await this.store.markVolumeLost(agent.id, error.message, this.ctx.clock.now());
        return;
      }
      const giveUp = agent.attempts >= DEPLOY_ATTEMPTS;
      this.ctx.log.warn({ err: error, agentId: agent.id, attempt: agent.attempts, giveUp }, 'agent deployment failed');
      // The last failure of a purchase and its refund commit together: a failed agent is always a refunded one.
      // Users see that it failed, not the provider's words (those are in the log).
      const reason = `the runtime did not start (attempt ${agent.attempts} of ${DEPLOY_ATTEMPTS})`;
      await this.ctx.db.transaction(async (tx) => {
        const moved = await this.store.recordFailure(tx, agent.id, reason, giveUp ? (existing ? 'stopped' : 'failed') : null, this.ctx.clock.now());
        if (moved && giveUp && !existing) await this.ctx.services.credits.refundAgentPurchase(tx, agent.id);
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

  specOf(agent: AgentRow, instanceId: string, appName: string, volumeRef: string | null): RuntimeSpec {
    return { agentId: agent.id, instanceId, appName, volumeRef, type: agent.type, ...RUNTIME_RESOURCES, dailyTokenBudget: agent.dailyTokenBudget, serviceUrl: this.ctx.urls.api };
  }

  /** Where a (re)started runtime answers, its handles, and its new token, sealed. */
  reachedAt(instanceId: string, started: DeployedRuntime) {
    return { url: started.url, volumeRef: started.volumeRef, machineRef: started.machineRef, sealedToken: this.tokens.seal(instanceId, started.token) };
  }
}
