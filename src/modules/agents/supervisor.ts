import type { AppContext } from '../../context.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { refOf, type AgentDeployer } from './deployer.js';
import { PROBE_TIMEOUT_MS, type RuntimeClient } from './runtime-client.js';
import { VolumeLostError, type RuntimeProvider } from './runtime-provider.js';
import type { AgentRow, AgentsStore, InstanceRow } from './store.js';

/** Running agents per page of the sweep, and how many of a page are probed at once. */
const PAGE = 100;
const PROBES_AT_ONCE = 8;

/**
 * Keeps every running agent's runtime answering, and stopped ones stopped. Each sweep pages through all
 * running agents: a month that is over stops the runtime (expired); otherwise the runtime is probed with the
 * token the service holds, and one that refuses it (401: it holds another), does not answer, hangs or is
 * another instance is deployed again on its volume, its new token stored with its address. Then stopped
 * instances are halted and volumes due are removed (with the agent's histories).
 */
export class AgentSupervisor {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: AgentsStore,
    private readonly provider: RuntimeProvider,
    private readonly runtime: RuntimeClient,
    private readonly deployer: AgentDeployer,
  ) {}

  async sweep(): Promise<void> {
    for (let after: string | null = null; ; ) {
      const page = await this.store.runningPage(after, PAGE);
      for (let i = 0; i < page.length; i += PROBES_AT_ONCE) {
        await Promise.all(page.slice(i, i + PROBES_AT_ONCE).map(({ agent, instance }) => this.#keep(agent, instance)));
      }
      if (page.length < PAGE) break;
      after = page.at(-1)!.agent.id;
    }
    for (const instance of await this.store.unhalted(PAGE)) await this.halt(instance);
    for (const instance of await this.store.dueForRemoval(this.ctx.clock.now(), PAGE)) {
      await this.#guard(instance.agentId, 'agent volume removal failed', async () => {
        await this.provider.remove(refOf(instance));
        await this.store.markRemoved(instance, this.ctx.clock.now());
      });
    }
  }

  /** Stops a stopped instance's runtime; if this fails the next sweep tries again. */
  async halt(instance: InstanceRow): Promise<void> {
    await this.#guard(instance.agentId, 'agent runtime halt failed', async () => {
      await this.provider.stop(refOf(instance));
      await this.store.markHalted(instance.id, instance.stoppedAt!, this.ctx.clock.now());
    });
  }

  async #keep(agent: AgentRow, instance: InstanceRow): Promise<void> {
    await this.#guard(agent.id, 'agent runtime supervision failed', async () => {
      if (instance.expiresAt && instance.expiresAt <= this.ctx.clock.now()) {
        if (await this.store.markExpired(agent.id, this.ctx.clock.now())) await this.halt((await this.store.instanceOf(agent.id))!);
        return;
      }
      if (await this.#answers(instance)) return;
      this.ctx.log.warn({ agentId: agent.id, instanceId: instance.id }, 'agent runtime not answering its probe: deploying it again on its volume');
      try {
        const started = await this.provider.deploy(this.deployer.specOf(agent, instance.id, instance.appName, instance.volumeRef));
        // Stopped or deleted meanwhile: what was started goes.
        if (!(await this.store.restarted(agent.id, this.deployer.reachedAt(instance.id, started), this.ctx.clock.now()))) await this.provider.stop(refOf(instance));
      } catch (error) {
        if (!(error instanceof VolumeLostError)) throw error;
        this.ctx.log.error({ agentId: agent.id, err: error }, 'agent volume lost');
        await this.store.markVolumeLost(agent.id, error.message, this.ctx.clock.now());
      }
    });
  }

  /** The authenticated probe: this instance's runtime, holding the token the service holds, answering in time. */
  async #answers(instance: InstanceRow): Promise<boolean> {
    try {
      const response = await this.runtime.send(instance, { method: 'GET', path: '/probe', timeoutMs: PROBE_TIMEOUT_MS });
      const answer = (await response.json().catch(() => null)) as { instanceId?: string } | null;
      return response.status === 200 && answer?.instanceId === instance.id;
    } catch {
      return false;
    }
  }

  async #guard(agentId: string, what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      this.ctx.log.warn({ err: error, agentId }, what);
    }
  }
}

export function agentLoops(deployer: AgentDeployer, supervisor: AgentSupervisor): BackgroundLoop[] {
  return [
    { name: 'agents.deploy', intervalMs: 1_000, leader: true, run: async () => (await deployer.deployDue()) === 5 },
    { name: 'agents.runtimes', intervalMs: 10_000, leader: true, run: async () => void (await supervisor.sweep()) },
  ];
}
