import { isoDate } from '../../platform/http/schemas.js';
import { refusedBeforeTransfer } from './payments.js';
import { CONDITIONS } from './reconcile.js';
import type { DepositView } from './deposits.js';
import type { RefundRow } from './refund-store.js';
import type { CheckoutView, IntentView, RefundView, SettlementBody } from './schemas.js';
import type { IntentRow } from './tables.js';

/** Failures decided after a transfer that did not pay this intent (docs/intents.md, failureCode values). */
const MOVED_ELSEWHERE: ReadonlySet<string> = new Set([CONDITIONS.mismatch.code, CONDITIONS.alreadyUsed.code]);

/** What a failed intent means for the payer's money; null for an intent that has not failed. */
export function failureMoneyMovedOf(row: Pick<IntentRow, 'status' | 'failureCode'>): CheckoutView['failureMoneyMoved'] {
  if (row.status !== 'failed') return null;
  // Intents failed this way before pay kept them payable (docs/intents.md): refused before any transfer.
  if (refusedBeforeTransfer(row.failureCode)) return 'none';
  if (row.failureCode && MOVED_ELSEWHERE.has(row.failureCode)) return 'not_for_this_intent';
  return 'unknown';
}

/** The pay address of an intent: the public x402 endpoint, and the hosted checkout page for a browser. */
export const paymentUrlOf = (baseUrl: string, intentId: string) => `${baseUrl}/v1/payment-intents/${intentId}/pay`;

/** 1 US cent = 10,000 atomic units of a 6-decimal dollar token (USDG). */
export const ATOMIC_UNITS_PER_CENT = 10_000n;
export const atomicAmountOf = (cents: number) => (BigInt(cents) * ATOMIC_UNITS_PER_CENT).toString();

export function intentView(row: IntentRow, baseUrl: string): IntentView {
  return {
    id: row.id,
    merchantId: row.merchantId,
    externalId: row.externalId,
    customerRef: row.customerRef,
    description: row.description,
    metadata: (row.metadata as Record<string, unknown> | null) ?? null,
    status: row.status,
    amountUsdCents: row.amountUsdCents,
    currency: 'USD',
    paymentUrl: paymentUrlOf(baseUrl, row.id),
    network: row.network,
    asset: row.asset,
    payTo: row.payTo,
    transactionHash: row.transactionHash,
    createdAt: row.createdAt.toISOString(),
    settledAt: isoDate(row.settledAt),
    expiresAt: row.expiresAt.toISOString(),
    failureCode: row.failureCode,
    failureMessage: row.failureMessage,
    returnUrl: row.returnUrl,
    lastPaymentError: row.lastPaymentErrorCode
      ? { code: row.lastPaymentErrorCode, message: row.lastPaymentErrorMessage ?? '', at: isoDate(row.lastPaymentErrorAt) ?? row.updatedAt.toISOString() }
      : null,
    paidVia: row.paidVia ?? null,
    receivedUsdCents: Number(BigInt(row.receivedAmount) / ATOMIC_UNITS_PER_CENT),
    refundedUsdCents: row.refundedUsdCents,
    payer: row.status === 'settled' ? row.payer : null,
  };
}

export function refundView(row: RefundRow): RefundView {
  return {
    id: row.id,
    intentId: row.intentId,
    amountUsdCents: row.amountUsdCents,
    status: row.status,
    transaction: row.transactionHash,
    recipient: row.recipient,
    failureCode: row.failureCode,
    failureMessage: row.failureMessage,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export function settlementBody(row: IntentRow): SettlementBody {
  return {
    id: row.id,
    status: row.status,
    amountUsdCents: row.amountUsdCents,
    currency: 'USD',
    settlement: row.transactionHash
      ? { transaction: row.transactionHash, network: row.network, payer: row.payer, settledAt: isoDate(row.settledAt) }
      : null,
  };
}

export function checkoutView(row: IntentRow, merchantName: string, deposit: DepositView | null = null): CheckoutView {
  return {
    id: row.id,
    status: row.status,
    amountUsdCents: row.amountUsdCents,
    currency: 'USD',
    amount: row.amount,
    network: row.network,
    asset: row.asset,
    payTo: row.payTo,
    merchant: { name: merchantName },
    description: row.description,
    returnUrl: row.returnUrl,
    expiresAt: row.expiresAt.toISOString(),
    settledAt: isoDate(row.settledAt),
    transactionHash: row.transactionHash,
    failureCode: row.failureCode,
    failureMoneyMoved: failureMoneyMovedOf(row),
    // The code and the time only: the page says it in words (a remote facilitator's message is not shown to anyone holding the link).
    lastPaymentError: row.lastPaymentErrorCode ? { code: row.lastPaymentErrorCode, at: isoDate(row.lastPaymentErrorAt) ?? row.updatedAt.toISOString() } : null,
    paidVia: row.paidVia ?? null,
    payer: row.status === 'settled' ? row.payer : null,
    deposit,
  };
}
