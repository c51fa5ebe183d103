import { ApiError } from '../../platform/http/errors.js';

// Credits answer in the envelope family; `data.reason` names the condition.
const fail = (status: number, reason: string, message: string, extra?: Record<string, unknown>) => new ApiError(status, reason, message, { reason, ...extra });

export const creditsErrors = {
  insufficientBalance: (balanceUsdCents: number, requiredUsdCents: number) =>
    fail(402, 'insufficient_balance', `The credits balance (${balanceUsdCents} cents) does not cover ${requiredUsdCents} cents; top up first`, { balanceUsdCents, requiredUsdCents }),
  invalidPayment: (message: string) => fail(400, 'invalid_payment', message),
  unknownLedgerCursor: (before: string) => fail(400, 'unknown_before', `before (${before}) is not an entry of your ledger: pass the id of the last entry of the previous page`, { before }),
  authorizationUsed: () => fail(409, 'payment_authorization_already_used', 'This payment authorization already paid another top-up; sign a new one'),
  paymentPending: (topUpId: string) =>
    fail(409, 'payment_pending', 'A top-up with this authorization awaits its settlement: do not sign again; it is credited once the chain confirms it', { topUpId }),
  unavailable: (message = 'Top-ups are not available: no payee is configured (CREDITS_PAY_TO)') => fail(503, 'top_up_unavailable', message),
  settlementUnknown: (topUpId: string) =>
    fail(503, 'settlement_result_unknown', 'The payment may have been sent; it is credited once the chain confirms it. Do not sign again', { topUpId }),
};
