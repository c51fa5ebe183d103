import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { ApiError, conflict } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import { approvalTimeoutSeconds, hostOf, hostRefusal, needsApproval, paymentRefusal, policyRefused, sameAsset, type AskedPayment } from './policy.js';
import { MAX_PENDING_APPROVALS, POLICY_WINDOWS, type ApprovalView, type BudgetLimitView, type Policy, type PolicyLimit } from './policy-schemas.js';
import { PolicyStore, type ApprovalAsk, type ApprovalRead, type WindowUsage } from './policy-store.js';
import type { PaymentRow } from './store.js';
import { noApprovalEvents, type ApprovalEventSink } from './approval-events.js';
import { approvalView } from './views.js';

// Caps that cannot be overrun. A payment's row is the reservation: it is written, in one transaction with the
// policy check, before anything is signed, and counts against every window it falls in while it is open or
// settled; failing (refused, never sent, expired unused by the chain's time) releases it. The transaction
// first locks the wallet's policy row, so two reservations of one wallet never interleave, whichever nodes
// they run on: the second counts the first. A process that dies after reserving leaves an open row the
// payments reconciler fails once the authorization's validBefore passes on chain (or settles, if it was sent).

export type Reservation = { kind: 'reserved' } | { kind: 'approval'; approval: ApprovalView };

/**
 * At most `amount` of (network, asset) in all, over every payment recorded under the paying credential (an OAuth
 * grant's, docs/mcp.md); a payment in any other asset is refused. Counted like a limit (settled and open payments,
 * failed ones released), under the same wallet lock, so concurrent calls on any node never pass it together.
 */
export interface CredentialCeiling {
  network: string;
  asset: string;
  amount: string;
}

/** What a ceiling allows still, as a tool or a page shows it (atomic units). */
export interface CeilingView extends CredentialCeiling {
  spent: string;
  reserved: string;
  remaining: string;
}

export interface ReserveInput {
  /** The pending payment row, complete (its nonce and validBefore are what will be signed). */
  row: PaymentRow;
  /** The URL the caller asked for: what an approval names. */
  url: string;
  /** The URL that will receive the signature (after redirects): whose host the rules check. */
  paidUrl: string;
  approvalId?: string;
  /** The paying credential's ceiling, when it has one. */
  ceiling?: CredentialCeiling;
}

export class SpendGuard {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** Where a new approval request is published (the queue its wallet's owner picked): approval-events.ts. */
    private readonly approvalEvents: ApprovalEventSink = noApprovalEvents,
  ) {}

  /**
   * The policy's host rule as a check for every hop of the unpaid request (the URL asked and each redirect),
   * made before any connection to it: a denied host never receives a request. Read once per call.
   */
  async hostRule(walletId: string): Promise<(url: URL) => void> {
    const row = await new PolicyStore(this.db, this.clock).policy(walletId);
    if (!row) return () => {};
    const policy = row.policy as Policy;
    return (url) => {
      const refusal = hostRefusal(policy, hostOf(url.href));
      if (refusal) throw policyRefused(refusal);
    };
  }

  /**
   * Checks the policy and records the payment in one transaction (see above). Refusals throw 409 with
   * nothing recorded; a payment that needs a human answers the approval instead (nothing recorded either).
   * Rules are checked cheapest first, then the windows, then the credential's ceiling, then the approval: a call
   * no approval could let through is refused rather than sent to a human.
   */
  async reserve(input: ReserveInput): Promise<Reservation> {
    const { row } = input;
    const published: string[] = [];
    const reservation = await this.db.transaction(async (tx): Promise<Reservation> => {
      const policies = new PolicyStore(tx, this.clock);
      // The wallet's row, not the policy's: it exists before any policy does, so a first policy set during a
      // burst still finds every reservation ordered behind one lock.
      await policies.lockWallet(row.walletId);
      const current = await policies.policy(row.walletId);
      const asked: AskedPayment = { host: hostOf(input.paidUrl), payTo: row.payTo, network: row.network, asset: row.asset, amount: BigInt(row.amount) };
      const policy = current ? (current.policy as Policy) : null;
      if (policy) {
        const refusal = paymentRefusal(policy, asked);
        if (refusal) throw policyRefused(refusal);
        await this.refuseOverLimit(policies, row.walletId, policy, asked);
      }
      if (input.ceiling) await refuseOverCeiling(policies, row, input.ceiling, asked);
      if (policy && needsApproval(policy, asked)) {
        const ask = { network: row.network, asset: row.asset, amount: row.amount, payTo: row.payTo, method: row.method, url: input.url };
        if (!input.approvalId) {
          const asked = await this.askApproval(policies, policy, row, ask, async (approval) => {
            // In the transaction that asks: an approval request and its event exist together, or neither.
            const queue = await this.approvalEvents.publish(tx, approval);
            if (queue) published.push(queue);
          });
          return { kind: 'approval', approval: approvalView(asked) };
        }
        if (!(await policies.consume(row.walletId, input.approvalId, ask, row.id))) {
          const approval = await policies.approval(row.walletId, input.approvalId);
          if (approval?.effectiveStatus === 'pending' && isSameCall(approval, ask)) return { kind: 'approval', approval: approvalView(approval) };
          throw approvalUnusable(approval);
        }
      }
      await policies.insertReserved(row);
      return { kind: 'reserved' };
    });
    for (const queue of published) this.approvalEvents.announce(queue);
    return reservation;
  }

  /** The pending approval of this call (asked again, the same one), or a new one while the wallet has room for it. */
  private async askApproval(policies: PolicyStore, policy: Policy, row: PaymentRow, ask: ApprovalAsk, asked: (approval: ApprovalView) => Promise<void>): Promise<ApprovalRead> {
    const waiting = await policies.pendingFor(row.walletId, ask);
    if (waiting) return waiting;
    // An agent asking for approvals of ever new URLs must not bury the ones a human should see.
    if ((await policies.livePendingCount(row.walletId)) >= MAX_PENDING_APPROVALS) {
      throw conflict(`The wallet already has ${MAX_PENDING_APPROVALS} approvals waiting for a decision; nothing was signed`, 'approvals_pending_full', { reason: 'approvals_pending_full' });
    }
    const approval = await policies.insertApproval({ id: newId(), walletId: row.walletId, requestedBy: row.credentialId, ...ask }, approvalTimeoutSeconds(policy));
    await asked(approvalView(approval));
    return approval;
  }

  /** What a credential's ceiling allows still (its payments so far, all time). */
  async ceiling(walletId: string, credentialId: string, ceiling: CredentialCeiling): Promise<CeilingView> {
    const usage = await new PolicyStore(this.db, this.clock).credentialUsage(walletId, credentialId, ceiling.network, ceiling.asset);
    return ceilingView(ceiling, usage);
  }

  /** Per limit of the policy: what its window holds now (one query per network and asset). */
  async budget(walletId: string): Promise<BudgetLimitView[]> {
    const policies = new PolicyStore(this.db, this.clock);
    const row = await policies.policy(walletId);
    const limits = ((row?.policy ?? {}) as Policy).limits ?? [];
    const usages = new Map<PolicyLimit, WindowUsage>();
    for (const limit of limits) {
      if (usages.has(limit)) continue;
      const same = limits.filter((l) => sameAsset(l, limit));
      const usage = await policies.usage(walletId, limit.network, limit.asset, same.map((l) => POLICY_WINDOWS[l.window]));
      same.forEach((l, i) => usages.set(l, usage[i]!));
    }
    return limits.map((limit) => budgetView(limit, usages.get(limit)!));
  }

  private async refuseOverLimit(policies: PolicyStore, walletId: string, policy: Policy, asked: AskedPayment): Promise<void> {
    const limits = (policy.limits ?? []).map((limit, i) => ({ limit, rule: `limits[${i}]` })).filter(({ limit }) => sameAsset(limit, asked));
    if (limits.length === 0) return;
    const usages = await policies.usage(walletId, asked.network, asked.asset, limits.map(({ limit }) => POLICY_WINDOWS[limit.window]));
    limits.forEach(({ limit, rule }, i) => {
      const usage = usages[i]!;
      if (usage.spent + usage.reserved + asked.amount <= BigInt(limit.amount)) return;
      const budget = budgetView(limit, usage);
      throw policyRefused(
        { reason: 'policy_limit_exceeded', rule, message: `The payment of ${asked.amount} would pass the policy's ${limit.window} limit of ${limit.amount} (${budget.remaining} remaining)` },
        { budget },
      );
    });
  }
}

/** The ceiling's refusal: another asset than the ceiling's, or more than it has left (settled plus open payments). */
async function refuseOverCeiling(policies: PolicyStore, row: PaymentRow, ceiling: CredentialCeiling, asked: AskedPayment): Promise<void> {
  if (!sameAsset(ceiling, asked)) {
    throw ceilingRefused(`This connection may pay only ${ceiling.asset} on ${ceiling.network}, not ${asked.asset} on ${asked.network}`, ceilingView(ceiling, { spent: 0n, reserved: 0n }));
  }
  const usage = await policies.credentialUsage(row.walletId, row.credentialId, ceiling.network, ceiling.asset);
  if (usage.spent + usage.reserved + asked.amount <= BigInt(ceiling.amount)) return;
  const view = ceilingView(ceiling, usage);
  throw ceilingRefused(`The payment of ${asked.amount} would pass this connection's ceiling of ${ceiling.amount} (${view.remaining} remaining)`, view);
}

const ceilingRefused = (message: string, ceiling: CeilingView) =>
  new ApiError(409, 'ceiling_exceeded', `${message}; nothing was signed`, { reason: 'ceiling_exceeded', rule: 'ceiling', ceiling });

function ceilingView(ceiling: CredentialCeiling, usage: { spent: bigint; reserved: bigint }): CeilingView {
  const left = BigInt(ceiling.amount) - usage.spent - usage.reserved;
  return { network: ceiling.network, asset: ceiling.asset, amount: ceiling.amount, spent: usage.spent.toString(), reserved: usage.reserved.toString(), remaining: (left > 0n ? left : 0n).toString() };
}

function budgetView(limit: PolicyLimit, usage: WindowUsage): BudgetLimitView {
  const left = BigInt(limit.amount) - usage.spent - usage.reserved;
  return {
    window: limit.window,
    network: limit.network,
    asset: limit.asset,
    amount: limit.amount,
    spent: usage.spent.toString(),
    reserved: usage.reserved.toString(),
    remaining: (left > 0n ? left : 0n).toString(),
    nextReleaseAt: usage.oldest ? new Date(usage.oldest.getTime() + POLICY_WINDOWS[limit.window] * 1000).toISOString() : null,
  };
}

const isSameCall = (approval: ApprovalRead, ask: ApprovalAsk) =>
  approval.network === ask.network && approval.asset === ask.asset && approval.payTo === ask.payTo && approval.method === ask.method && approval.url === ask.url && BigInt(approval.amount) >= BigInt(ask.amount);

const MISMATCH = ['approval_mismatch', 'The approval was asked for another call: same method and url, same recipient and asset, and at most its amount'] as const;

/** Why an approvalId cannot pay this call; nothing was signed. */
function approvalUnusable(approval: ApprovalRead | undefined): ApiError {
  if (!approval) return conflict('No approval of this wallet has that approvalId; nothing was signed', 'approval_not_found', { reason: 'approval_not_found' });
  const reason = {
    denied: ['approval_denied', 'The approval was denied'],
    expired: ['approval_expired', 'The approval expired before it was used (an expired approval counts as denied)'],
    consumed: ['approval_used', 'The approval was already used by another payment'],
    pending: MISMATCH,
    approved: MISMATCH,
  }[approval.effectiveStatus];
  return conflict(`${reason[1]}; nothing was signed`, reason[0], { reason: reason[0], approval: approvalView(approval) });
}
