import { isoDate } from '../../platform/http/schemas.js';
import type { PaymentView } from './pay-schemas.js';
import type { CredentialView, WalletView } from './schemas.js';
import { approvalTimeoutSeconds } from './policy.js';
import type { ApprovalView, Policy, PolicyView } from './policy-schemas.js';
import type { ApprovalRead, PolicyRow } from './policy-store.js';
import type { CredentialRow, PaymentRow, WalletRow } from './store.js';

// Row → API shapes. `keyRef`, the owner and the provisioning bookkeeping never leave the service.

export const walletView = (row: WalletRow): WalletView => ({
  id: row.id,
  externalId: row.externalId,
  name: row.name,
  provider: row.provider,
  address: row.address,
  chainType: row.chainType,
  status: row.status as WalletView['status'],
  metadata: row.metadata ?? null,
  lastError: row.lastError,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

export const credentialView = (row: CredentialRow): CredentialView => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  status: row.status as CredentialView['status'],
  lastUsedAt: isoDate(row.lastUsedAt),
  expiresAt: isoDate(row.expiresAt),
  createdAt: row.createdAt.toISOString(),
});

export const paymentView = (row: PaymentRow): PaymentView => ({
  id: row.id,
  status: row.status as PaymentView['status'],
  x402Version: row.x402Version,
  scheme: row.scheme,
  network: row.network,
  asset: row.asset,
  amount: row.amount,
  payTo: row.payTo,
  transaction: row.transaction,
  settlement: row.settlement ?? null,
  error: row.error,
  method: row.method,
  resource: row.resource,
  host: hostOfResource(row.resource),
  requestId: row.requestId,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

/** The host a payment's resource (origin and path) names; null for a transfer's `transfer:<address>`. */
function hostOfResource(resource: string): string | null {
  try {
    const url = new URL(resource);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.hostname : null;
  } catch {
    return null;
  }
}

export const approvalView = (row: ApprovalRead): ApprovalView => ({
  id: row.id,
  walletId: row.walletId,
  status: row.effectiveStatus,
  network: row.network,
  asset: row.asset,
  amount: row.amount,
  payTo: row.payTo,
  method: row.method,
  url: row.url,
  createdAt: new Date(row.createdAt).toISOString(),
  expiresAt: new Date(row.expiresAt).toISOString(),
  decidedBy: row.decidedBy,
  decidedAt: row.decidedAt ? new Date(row.decidedAt).toISOString() : null,
  paymentId: row.paymentId,
  consumedAt: row.consumedAt ? new Date(row.consumedAt).toISOString() : null,
});

/** The policy as set (absent rules absent), or no rules at all when none was ever set. */
export const policyView = (walletId: string, row: PolicyRow | undefined): PolicyView => {
  const policy = (row?.policy ?? {}) as Policy;
  return { ...policy, walletId, approvalTimeoutSeconds: approvalTimeoutSeconds(policy), updatedAt: row ? row.updatedAt.toISOString() : null };
};
