import type { AppContext } from '../../context.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { refOf, type AgentDeployer } from './deployer.js';
import { PROBE_TIMEOUT_MS, type RuntimeClient } from './runtime-client.js';
import { VolumeLostError, type RuntimeProvider } from './runtime-provider.js';
import type { AgentRow, AgentsStore, InstanceRow } from './store.js';

/** Running agents per page of the sweep, and how many of a page are probed at once. */
const PAGE = 100;
const PROBES_AT_ONCE = 8;
/** Sweeps in a row a runtime may leave the probe unanswered (slow, not gone) before it is replaced. */
const SILENT_SWEEPS = 2;

type Probe = { kind: 'ok'; dailyTokens: number | null } | { kind: 'refused' } | { kind: 'silent' };

/**
 * Keeps every running agent's runtime answering, and stopped ones stopped. Each sweep pages through all
 * running agents: a month that is over stops the runtime (expired); otherwise the runtime is probed with the
 * token the service holds, and one that refuses it (401: it holds another), cannot be reached or is another
 * instance is deployed again on its volume, its new token stored with its address; one that hangs (no answer
 * in time) is given a second sweep first, since replacing it cuts its turns in flight. A runtime that answers
 * with another daily token budget than the agent's (a hosted machine restarted with its first settings) is
 * told the agent's. Then stopped instances are halted and volumes due are removed (with the agent's histories).
 */
export class AgentSupervisor {
  /** Sweeps in a row each instance left the probe unanswered (this node's; the loop runs on one node). */
  readonly #silent = new Map<string, number>();

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
      const probe = await this.#probe(instance);
      if (probe.kind === 'ok') {
        this.#silent.delete(instance.id);
        if (probe.dailyTokens !== null && probe.dailyTokens !== agent.dailyTokenBudget) await this.runtime.json(instance, { method: 'PUT', path: '/budget', body: { dailyTokens: agent.dailyTokenBudget } }, this.ctx.clock.now());
        return;
      }
      if (probe.kind === 'silent') {
        const misses = (this.#silent.get(instance.id) ?? 0) + 1;
        this.#silent.set(instance.id, misses);
        if (misses < SILENT_SWEEPS) return;
      }
      this.#silent.delete(instance.id);
      this.ctx.log.warn({ agentId: agent.id, instanceId: instance.id, probe: probe.kind }, 'agent runtime failed its probe: deploying it again on its volume');
      try {
        const started = await this.provider.deploy(this.deployer.specOf(agent, instance.id, instance.appName, instance.volumeRef));
        // Stopped or deleted meanwhile: what was just started goes (by its own handles).
        if (!(await this.store.restarted(agent.id, this.deployer.reachedAt(instance.id, started), this.ctx.clock.now()))) {
          await this.provider.stop({ ...refOf(instance), volumeRef: started.volumeRef, machineRef: started.machineRef });
        }
      } catch (error) {
        if (!(error instanceof VolumeLostError)) throw error;
        this.ctx.log.error({ agentId: agent.id, err: error }, 'agent volume lost');
        await this.store.markVolumeLost(agent.id, error.message, this.ctx.clock.now());
      }
    });
  }

  /** The authenticated probe: this instance's runtime, holding the token the service holds, answering in time. */
  async #probe(instance: InstanceRow): Promise<Probe> {
    let response: Response;
    try {
      response = await this.runtime.fetch(instance, { method: 'GET', path: '/probe', timeoutMs: PROBE_TIMEOUT_MS });
    } catch (error) {
      return (error as Error).name === 'TimeoutError' ? { kind: 'silent' } : { kind: 'refused' };
    }
    const answer = (await response.json().catch(() => null)) as { instanceId?: string; dailyTokens?: number } | null;
    return response.status === 200 && answer?.instanceId === instance.id ? { kind: 'ok', dailyTokens: answer.dailyTokens ?? null } : { kind: 'refused' };
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
