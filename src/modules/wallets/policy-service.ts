import type { AppContext } from '../../context.js';
import { conflict, notFound } from '../../platform/http/errors.js';
import { UUID_PATTERN } from '../../platform/ids.js';
import type { ApprovalStatus, ApprovalView, BudgetLimitView, Policy, PolicyView } from './policy-schemas.js';
import { PolicyStore } from './policy-store.js';
import type { SpendGuard } from './spend-guard.js';
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
