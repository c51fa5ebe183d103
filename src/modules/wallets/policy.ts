import { ApiError } from '../../platform/http/errors.js';
import { DEFAULT_APPROVAL_TIMEOUT_SECONDS, type Policy, type PolicyAmount } from './policy-schemas.js';

// The rules of a spend policy that need no database: who may be paid, and how much one call may cost.
// The rolling limits need the wallet's payments and are counted by spend-guard.ts, under the policy's lock.

export type PolicyReason = 'policy_limit_exceeded' | 'policy_per_call_exceeded' | 'policy_host_denied' | 'policy_payto_denied';

export interface Refusal {
  reason: PolicyReason;
  /** The rule that refused, as the policy names it: `denyHosts[2]`, `allowPayTo`, `limits[0]`, ... */
  rule: string;
  message: string;
}

/** A payment about to be signed, as the policy sees it. */
export interface AskedPayment {
  host: string;
  payTo: string;
  network: string;
  asset: string;
  amount: bigint;
}

export const sameAsset = (a: Pick<PolicyAmount, 'network' | 'asset'>, b: Pick<PolicyAmount, 'network' | 'asset'>) =>
  a.network === b.network && a.asset.toLowerCase() === b.asset.toLowerCase();

/** `*.domain` matches every subdomain of domain (not domain itself); anything else matches exactly. */
export const hostMatches = (pattern: string, host: string) => (pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern);

/** The host a URL pays, as the rules compare it: lowercase, no port, no trailing dots. */
export const hostOf = (url: string) => new URL(url).hostname.toLowerCase().replace(/\.+$/, '');

export function hostRefusal(policy: Policy, host: string): Refusal | null {
  const denied = policy.denyHosts?.findIndex((p) => hostMatches(p, host)) ?? -1;
  if (denied >= 0) return { reason: 'policy_host_denied', rule: `denyHosts[${denied}]`, message: `The wallet's policy denies paying ${host} (denyHosts[${denied}] = ${policy.denyHosts![denied]})` };
  if (policy.allowHosts && !policy.allowHosts.some((p) => hostMatches(p, host))) {
    return { reason: 'policy_host_denied', rule: 'allowHosts', message: `The wallet's policy allows paying only the hosts in allowHosts; ${host} is not one of them` };
  }
  return null;
}

/**
 * Everything a policy says about one payment short of its rolling limits, in the order a refusal is most
 * useful to read: where the money goes, then how much one call may cost. Amount rules name an asset; when a
 * policy has any, a payment in an asset none of them names is refused (a cap on USDG must not be bypassed by
 * paying in another token the wallet holds).
 */
export function paymentRefusal(policy: Policy, payment: AskedPayment): Refusal | null {
  const host = hostRefusal(policy, payment.host);
  if (host) return host;
  const payTo = payment.payTo.toLowerCase();
  const denied = policy.denyPayTo?.findIndex((a) => a.toLowerCase() === payTo) ?? -1;
  if (denied >= 0) return { reason: 'policy_payto_denied', rule: `denyPayTo[${denied}]`, message: `The wallet's policy denies paying ${payment.payTo} (denyPayTo[${denied}])` };
  if (policy.allowPayTo && !policy.allowPayTo.some((a) => a.toLowerCase() === payTo)) {
    return { reason: 'policy_payto_denied', rule: 'allowPayTo', message: `The wallet's policy allows paying only the addresses in allowPayTo; ${payment.payTo} is not one of them` };
  }
  const amountRules = [...(policy.limits ?? []), ...(policy.maxPerCall ? [policy.maxPerCall] : []), ...(policy.approvalAbove ? [policy.approvalAbove] : [])];
  if (amountRules.length > 0 && !amountRules.some((r) => sameAsset(r, payment))) {
    const rule = policy.limits?.length ? 'limits' : policy.maxPerCall ? 'maxPerCall' : 'approvalAbove';
    const reason = rule === 'maxPerCall' ? 'policy_per_call_exceeded' : 'policy_limit_exceeded';
    return { reason, rule, message: `The wallet's policy caps payments only in the assets it names; ${payment.asset} on ${payment.network} is not one of them` };
  }
  if (policy.maxPerCall && sameAsset(policy.maxPerCall, payment) && payment.amount > BigInt(policy.maxPerCall.amount)) {
    return { reason: 'policy_per_call_exceeded', rule: 'maxPerCall', message: `The payment of ${payment.amount} is above the policy's maxPerCall of ${policy.maxPerCall.amount}` };
  }
  return null;
}

/** Above `approvalAbove` (same asset, strictly more) a human decides first. */
export const needsApproval = (policy: Policy, payment: AskedPayment) =>
  !!policy.approvalAbove && sameAsset(policy.approvalAbove, payment) && payment.amount > BigInt(policy.approvalAbove.amount);

export const approvalTimeoutSeconds = (policy: Policy) => policy.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS;

/** A refusal as the API answers it: 409, `data.reason` and `data.rule` (plus what explains it); nothing was signed. */
export const policyRefused = (refusal: Refusal, details: Record<string, unknown> = {}) =>
  new ApiError(409, refusal.reason, `${refusal.message}; nothing was signed`, { reason: refusal.reason, rule: refusal.rule, ...details });
