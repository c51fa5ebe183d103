import { isoDate } from '../../platform/http/schemas.js';
import type { PaymentView } from './pay-schemas.js';
import type { CredentialView, WalletView } from './schemas.js';
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
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});
