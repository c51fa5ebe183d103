import { ApiError } from '../../platform/http/errors.js';
import type { Metrics } from '../../platform/metrics.js';
import type { PayAndCallResult } from './pay-schemas.js';

/**
 * How a pay-and-call ended: `free` (no payment asked), `paid` (signed and sent; the upstream did not refuse
 * it), `approval` (held for a human; nothing signed), `refused` (a 409 before signing: the spend policy, an
 * unusable approval, an inactive wallet), `rejected` (the upstream refused the signed payment), `error`
 * (anything else: bad input or URL, upstream failure or timeout, unusable challenge, signing).
 */
const OUTCOMES = ['free', 'paid', 'approval', 'refused', 'rejected', 'error'] as const;
export type PayAndCallOutcome = (typeof OUTCOMES)[number];

export interface PayAndCallOutcomes {
  answered(result: PayAndCallResult): void;
  failed(error: unknown): void;
}

export function payAndCallOutcomes(metrics: Metrics): PayAndCallOutcomes {
  const counter = metrics.counter('tollgate_pay_and_call_total', 'Pay-and-call calls by outcome (free, paid, approval, refused, rejected, error)', ['outcome']);
  const count = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, counter.labels({ outcome })])) as Record<PayAndCallOutcome, ReturnType<typeof counter.labels>>;
  return {
    answered: (result) => count['approval' in result ? 'approval' : result.payment ? 'paid' : 'free'].inc(),
    failed: (error) => count[error instanceof ApiError ? (error.code === 'payment_failed' ? 'rejected' : error.status === 409 ? 'refused' : 'error') : 'error'].inc(),
  };
}
