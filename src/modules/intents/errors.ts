import { ApiError } from '../../platform/http/errors.js';

// The spec's Payment Intent errors table, one factory per code. The `intent` family renders them
// as { code, message, details? }.

/** Seconds a client should wait before retrying a 503 (the answer also carries Retry-After). */
const RETRY_AFTER_SECONDS = '5';
const unavailable = (code: string, message: string, details?: unknown) =>
  new ApiError(503, code, message, details, { 'retry-after': RETRY_AFTER_SECONDS });

export const intentErrors = {
  invalidRequest: (message: string, details?: unknown) => new ApiError(400, 'invalid_request', message, details),
  merchantDisabled: (message = 'The merchant of this intent is disabled: it accepts no payments') => new ApiError(403, 'merchant_disabled', message),
  merchantNotFound: () => new ApiError(404, 'merchant_not_found', 'Merchant not found in this project'),
  intentNotFound: () => new ApiError(404, 'intent_not_found', 'Payment intent not found'),
  conflict: (message: string, details?: unknown) => new ApiError(409, 'intent_conflict', message, details),
  settlementInProgress: () => new ApiError(409, 'settlement_in_progress', 'Another request is settling this intent'),
  authorizationAlreadyUsed: (message = 'The payment authorization belongs to another intent') =>
    new ApiError(409, 'payment_authorization_already_used', message),
  expired: (expiresAt: Date) =>
    new ApiError(410, 'intent_expired', 'The payment window of this intent has ended', { expiresAt: expiresAt.toISOString() }),
  rateLimited: (retryAfterSeconds: number, scope: 'intent' | 'client') =>
    new ApiError(429, 'rate_limited', 'Too many payment attempts', { scope }, { 'retry-after': String(retryAfterSeconds) }),
  facilitatorUnavailable: (message = 'Payment verification or settlement is temporarily unavailable') =>
    unavailable('facilitator_unavailable', message),
  settlementResultUnknown: () =>
    unavailable('settlement_result_unknown', 'The settlement outcome is not known yet; it is being reconciled. Do not create a replacement intent.'),
  reconciliationUnavailable: () => unavailable('reconciliation_unavailable', 'Reconciliation is temporarily unavailable'),
  // Refunds (extension, docs/intents.md#refunds).
  // `details.reason` repeats the code: the owner's routes answer in the envelope family, whose code is a number.
  refundWalletNotConfigured: () =>
    new ApiError(409, 'refund_wallet_not_configured', "The project names no refund wallet: its owner sets one with PATCH /v1/projects/{projectId} (refundWalletId)", { reason: 'refund_wallet_not_configured' }),
  refundWalletUnavailable: () =>
    new ApiError(409, 'refund_wallet_unavailable', "The project's refund wallet cannot pay: its credential was revoked or expired; its owner names it again", { reason: 'refund_wallet_unavailable' }),
  refundExceedsRefundable: (requestedUsdCents: number, refundableUsdCents: number) =>
    new ApiError(409, 'refund_exceeds_refundable', `The refund is more than is left to refund (${refundableUsdCents} cents)`, { reason: 'refund_exceeds_refundable', requestedUsdCents, refundableUsdCents }),
};
