import type { AppContext } from '../../context.js';
import type { ApprovalStatus, ApprovalView, Policy, PolicyView } from '../wallets/policy-schemas.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import { agentsErrors } from './errors.js';
import type { AgentRow } from './store.js';

/**
 * A runtime_b agent's wallet under the wallets module's spend policy, driven by the agent's user: the same
 * policy shape, approvals and approval events as any wallet's (docs/wallets.md), through the wallets module's
 * service. The user proves the right to the wallet by owning the agent (the route's first step); the agents
 * application, which owns every agent wallet, is recorded as who set the policy or decided an approval.
 */
export class AgentWalletPolicy {
  constructor(private readonly ctx: AppContext) {}

  /** The agent's wallet; a runtime_a agent, or a runtime_b one before its first deployment, has none (409). */
  #walletOf(agent: AgentRow): string {
    if (agent.type !== 'runtime_b' || !agent.walletId) throw agentsErrors.noWallet();
    return agent.walletId;
  }

  policy(agent: AgentRow): Promise<PolicyView> {
    return this.ctx.services.walletPolicies.policy(this.#walletOf(agent));
  }

  setPolicy(agent: AgentRow, policy: Policy): Promise<PolicyView> {
    return this.ctx.services.walletPolicies.setPolicy(this.#walletOf(agent), policy, AGENTS_WALLET_OWNER);
  }

  approvals(agent: AgentRow, status?: ApprovalStatus): Promise<ApprovalView[]> {
    return this.ctx.services.walletPolicies.approvals(this.#walletOf(agent), status);
  }

  decide(agent: AgentRow, approvalId: string, decision: 'approved' | 'denied'): Promise<ApprovalView> {
    return this.ctx.services.walletPolicies.decide(this.#walletOf(agent), approvalId, decision, AGENTS_WALLET_OWNER);
  }

  approvalEvents(agent: AgentRow) {
    return this.ctx.services.walletPolicies.approvalQueue(this.#walletOf(agent));
  }

  /**
   * Names the queue the wallet's approval requests go to: one of the user's own projects' queues (another
   * user's project, or a queue not of that project, is 404 as the projects and events modules answer it).
   */
  async setApprovalEvents(userId: string, agent: AgentRow, target: { projectId: string; queueId: string } | null) {
    const walletId = this.#walletOf(agent);
    if (target) {
      await this.ctx.services.projects.requireOwned(userId, target.projectId);
      await this.ctx.services.events.queues.get(target.projectId, target.queueId);
    }
    return this.ctx.services.walletPolicies.setApprovalQueue(walletId, target);
  }
}
