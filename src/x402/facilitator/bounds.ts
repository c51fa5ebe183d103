// Bounds a payment must keep before this facilitator spends anything on it (it is public: every
// settle costs our relayer gas). Amount and timeout need only the request (precheck calls
// requestBounds); the authorization's window is judged against the chain's time, the latest
// block's timestamp, never a node's clock (timeBounds), so a payment the token would refuse for
// its time window is named `valid_after` / `valid_before` instead of a failed simulation.
import type { PaymentRequirements } from '@x402/core/types';
import type { Eip3009Payload } from '../payload.js';
import { Reason } from './reasons.js';

/** Cap on `maxTimeoutSeconds`: one hour, the same cap pay-and-call applies to what it signs. */
export const MAX_TIMEOUT_SECONDS = 3600;
/** How far past chain time + maxTimeoutSeconds a `validBefore` may reach: client clocks run ahead, blocks lag. */
export const VALID_BEFORE_SKEW_SECONDS = 60;
/** The exact scheme's own margin: an authorization must leave 6 s for the transaction to land. */
export const VALID_BEFORE_MARGIN_SECONDS = 6;

export interface Refusal {
  reason: string;
  message: string;
}

/** What the request alone decides: a positive amount and a capped timeout (authorization numbers are uint strings by then). */
export function requestBounds(requirements: PaymentRequirements, eip3009: Eip3009Payload): Refusal | null {
  if (!/^\d{1,78}$/.test(requirements.amount)) return { reason: Reason.invalidPaymentRequirements, message: 'amount must be an unsigned integer string' };
  if (BigInt(requirements.amount) === 0n) return { reason: Reason.invalidPaymentRequirements, message: 'amount must be greater than 0' };
  if (requirements.maxTimeoutSeconds > MAX_TIMEOUT_SECONDS) {
    return { reason: Reason.invalidPaymentRequirements, message: `maxTimeoutSeconds must be at most ${MAX_TIMEOUT_SECONDS}` };
  }
  if (requirements.maxTimeoutSeconds < 1) return { reason: Reason.invalidPaymentRequirements, message: 'maxTimeoutSeconds must be at least 1' };
  if (BigInt(eip3009.authorization.value) === 0n) {
    return { reason: Reason.valueMismatch, message: 'authorization.value must be greater than 0 (and equal amount)' };
  }
  return null;
}

/** The authorization's window against `chainNow` (the latest block's timestamp, seconds). */
export function timeBounds(requirements: PaymentRequirements, eip3009: { authorization: Pick<Eip3009Payload['authorization'], 'validAfter' | 'validBefore'> }, chainNow: bigint): Refusal | null {
  const validAfter = BigInt(eip3009.authorization.validAfter);
  const validBefore = BigInt(eip3009.authorization.validBefore);
  if (validAfter > chainNow) {
    return { reason: Reason.validAfter, message: `not valid yet: validAfter ${validAfter} is after the chain's time ${chainNow}` };
  }
  if (validBefore < chainNow + BigInt(VALID_BEFORE_MARGIN_SECONDS)) {
    return {
      reason: Reason.validBefore,
      message: `expired: validBefore ${validBefore} is not at least ${VALID_BEFORE_MARGIN_SECONDS} s after the chain's time ${chainNow}`,
    };
  }
  const latest = chainNow + BigInt(requirements.maxTimeoutSeconds + VALID_BEFORE_SKEW_SECONDS);
  if (validBefore > latest) {
    return {
      reason: Reason.validBefore,
      message: `validBefore ${validBefore} is too far ahead: at most the chain's time ${chainNow} + maxTimeoutSeconds (${requirements.maxTimeoutSeconds}) + ${VALID_BEFORE_SKEW_SECONDS} s`,
    };
  }
  return null;
}
