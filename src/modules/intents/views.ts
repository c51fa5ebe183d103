import { isoDate } from '../../platform/http/schemas.js';
import { Reason } from '../../x402/facilitator/reasons.js';
import { CONDITIONS } from './reconcile.js';
import type { CheckoutView, IntentView, SettlementBody } from './schemas.js';
import type { IntentRow } from './store.js';

/**
 * The facilitator's settle refusals end before any transfer, or with one that reverted; all but these,
 * which say an authorization was used or the outcome is not known.
 */
const REFUSED_BEFORE_TRANSFER: ReadonlySet<string> = new Set(
  Object.values(Reason).filter((code) => !([Reason.nonceAlreadyUsed, Reason.transferEventMismatch, Reason.settlementPending, Reason.paymentIdentifierConflict] as string[]).includes(code)),
);
/** Failures decided after a transfer that did not pay this intent (docs/intents.md, failureCode values). */
const MOVED_ELSEWHERE: ReadonlySet<string> = new Set([CONDITIONS.mismatch.code, CONDITIONS.alreadyUsed.code]);

/** What a failed intent means for the payer's money; null for an intent that has not failed. */
export function failureMoneyMovedOf(row: Pick<IntentRow, 'status' | 'failureCode'>): CheckoutView['failureMoneyMoved'] {
  if (row.status !== 'failed') return null;
  if (row.failureCode && REFUSED_BEFORE_TRANSFER.has(row.failureCode)) return 'none';
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

export function checkoutView(row: IntentRow, merchantName: string): CheckoutView {
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
  };
}
