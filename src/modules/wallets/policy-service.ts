import type { AppContext } from '../../context.js';
import { ApiError, conflict, notFound } from '../../platform/http/errors.js';
import { UUID_PATTERN } from '../../platform/ids.js';
import { SECRET_PREFIXES } from '../../platform/secrets.js';
import type { ApprovalEventsInput, ApprovalQueueView, ApprovalStatus, ApprovalView, BudgetLimitView, Policy, PolicyView } from './policy-schemas.js';
import { PolicyStore } from './policy-store.js';
import type { CeilingView, CredentialCeiling, SpendGuard } from './spend-guard.js';
import { approvalView, policyView } from './views.js';

const APPROVALS_PAGE = 100;

/**
 * Spend policies and approvals of a wallet, by its id: callers prove the right to it first (the management
 * credential owns it, or the wallet credential is its own). Setting a policy replaces it whole; the next
 * reservation reads it under its lock, so a change applies to the next call at once, on every node.
 */
export class WalletPolicies {
  private readonly store: PolicyStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly guard: SpendGuard,
  ) {
    this.store = new PolicyStore(ctx.db, ctx.clock);
  }

  async policy(walletId: string): Promise<PolicyView> {
    return policyView(walletId, await this.store.policy(walletId));
  }

  async setPolicy(walletId: string, policy: Policy, managementCredentialId: string): Promise<PolicyView> {
    return policyView(walletId, await this.store.putPolicy(walletId, policy, managementCredentialId, this.ctx.clock.now()));
  }

  budget(walletId: string): Promise<BudgetLimitView[]> {
    return this.guard.budget(walletId);
  }

  /** What a credential's ceiling (an OAuth grant's) allows still. */
  ceiling(walletId: string, credentialId: string, ceiling: CredentialCeiling): Promise<CeilingView> {
    return this.guard.ceiling(walletId, credentialId, ceiling);
  }

  /** Where the wallet's approval requests are published (approval-events.ts); null: nowhere. */
  async approvalQueue(walletId: string): Promise<{ projectId: string; queueId: string } | null> {
    return (await this.store.approvalQueue(walletId)) ?? null;
  }

  /** Names the queue, or with null stops the events. The caller proved the right to both the wallet and the queue. */
  async setApprovalQueue(walletId: string, target: { projectId: string; queueId: string } | null): Promise<{ projectId: string; queueId: string } | null> {
    await this.store.setApprovalQueue(walletId, target, this.ctx.clock.now());
    return target;
  }

  /**
   * Names the queue for a wallet owned through a management credential, which belongs to no project: an API key
   * of the queue's project proves the right to publish into it, as a wallet credential proves a refund wallet
   * (projects). The order: the key first, so a queue id of a project the caller holds no key of tells nothing;
   * then the queue through the events module. A key unknown, revoked, disabled or of another project, and a queue
   * not of that project, are all 404 `queue_not_found`. The key is neither stored nor shown: it proves the right
   * once; the project's owner stops the events by deleting the queue (publishing then skips it).
   */
  async setApprovalQueueByKey(walletId: string, input: ApprovalEventsInput): Promise<ApprovalQueueView> {
    if (!input) return this.setApprovalQueue(walletId, null);
    const { projectApiKey, ...target } = input;
    const key = projectApiKey.startsWith(SECRET_PREFIXES.api) ? await this.ctx.keyRotation.find(projectApiKey, this.ctx.services.projects.resolveKey) : null;
    if (!key || key.disabled || key.projectId !== target.projectId) throw new ApiError(404, 'queue_not_found', 'Event queue not found: projectApiKey must be an active API key of the project that owns the queue', { reason: 'queue_not_found' });
    await this.ctx.services.events.queues.get(target.projectId, target.queueId);
    return this.setApprovalQueue(walletId, target);
  }

  async approvals(walletId: string, status?: ApprovalStatus): Promise<ApprovalView[]> {
    return (await this.store.approvalsOf(walletId, status, APPROVALS_PAGE)).map(approvalView);
  }

  /**
   * A pending approval decided once; an approved one can still be denied until it is used. The same decision
   * again answers it as it is; anything else 409.
   */
  async decide(walletId: string, approvalId: string, decision: 'approved' | 'denied', managementCredentialId: string): Promise<ApprovalView> {
    if (!UUID_PATTERN.test(approvalId)) throw notFound('Approval not found', 'approval_not_found');
    const decided = await this.store.decide(walletId, approvalId, decision, managementCredentialId);
    if (decided) return approvalView(decided);
    const current = await this.store.approval(walletId, approvalId);
    if (!current) throw notFound('Approval not found', 'approval_not_found');
    if (current.effectiveStatus === decision) return approvalView(current);
    throw conflict(`The approval is ${current.effectiveStatus}; ${decision === 'denied' ? 'only a pending or approved one can be denied' : 'only a pending one can be approved'}`, 'approval_not_pending', { reason: 'approval_not_pending', approval: approvalView(current) });
  }
}
