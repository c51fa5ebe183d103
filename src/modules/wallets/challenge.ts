import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { isAddress } from 'viem';
import { ApiError } from '../../platform/http/errors.js';
import type { SafeResponse } from '../../platform/safe-fetch.js';
import { parsePaymentRequired, SellerAnswerError } from '../../x402/seller-answers.js';
import type { PayAndCallInput } from './pay-schemas.js';

// Reads an upstream 402 as an x402 v2 challenge (src/x402/seller-answers.ts: the JSON guard, then
// our schema) and picks the requirement pay-and-call may pay.

/** The v2 challenge of a 402; an unusable one is the upstream's failure: 502 invalid_challenge. */
export function parseChallenge(response: SafeResponse): PaymentRequired {
  try {
    return parsePaymentRequired((name) => response.headers[name], response.body);
  } catch (error) {
    if (!(error instanceof SellerAnswerError)) throw error;
    throw new ApiError(502, 'invalid_challenge', `The upstream answered 402 without a usable x402 v2 challenge: ${error.message}`, error.issues);
  }
}

/**
 * The longest authorization we sign. An upstream asking for more could hold a signature that
 * stays spendable long after it told us the payment was refused. It also bounds, for the
 * reconciler, when an unused authorization can no longer move money (see reconcile.ts).
 */
export const MAX_AUTHORIZATION_SECONDS = 3600;

const matchesMax = (r: PaymentRequirements, max: PayAndCallInput['maxPayment']) =>
  r.network === max.network && r.asset.toLowerCase() === max.asset.toLowerCase() && BigInt(r.amount) <= BigInt(max.amount);

const exactPayable = (r: PaymentRequirements) => r.scheme === 'exact' && (r.extra?.assetTransferMethod === undefined || r.extra.assetTransferMethod === 'eip3009');
/** `upto`: a Permit2 permit for at most `amount`, sendable only by the facilitator it names. */
const uptoPayable = (r: PaymentRequirements) =>
  r.scheme === 'upto' && (r.extra?.assetTransferMethod === undefined || r.extra.assetTransferMethod === 'permit2') && typeof r.extra?.facilitatorAddress === 'string' && isAddress(r.extra.facilitatorAddress);
/** `batch-settlement`: a voucher on the wallet's channel with the seller (channel-pay.ts), deposits by EIP-3009. */
export const batchPayable = (r: PaymentRequirements) =>
  r.scheme === 'batch-settlement' && (r.extra?.assetTransferMethod === undefined || r.extra.assetTransferMethod === 'eip3009') && typeof r.extra?.receiverAuthorizer === 'string' && isAddress(r.extra.receiverAuthorizer);
const payable = (r: PaymentRequirements) => (exactPayable(r) || uptoPayable(r) || batchPayable(r)) && r.maxTimeoutSeconds <= MAX_AUTHORIZATION_SECONDS;

/**
 * The requirement to pay. The spec's rule first: pay "only when all returned requirements match
 * maxPayment" (same network and asset, amount at most maxPayment.amount; an `upto` amount is its maximum); one
 * offer outside it and nothing is paid. Among them, the cheapest one we can sign (scheme `exact` by EIP-3009, or
 * `upto` by Permit2, or `batch-settlement` by a voucher on the wallet's channel; valid at most MAX_AUTHORIZATION_SECONDS), the first on a tie: an `upto` maximum equal to an
 * `exact` price loses only by order, since it may charge less. Otherwise 400 with the offers, nothing signed.
 */
export function chooseRequirement(challenge: PaymentRequired, max: PayAndCallInput['maxPayment']): PaymentRequirements {
  const refuse = (why: string) =>
    new ApiError(400, 'payment_requirements_rejected', `${why}; nothing was signed`, {
      x402Version: challenge.x402Version,
      accepts: challenge.accepts,
      maxPayment: max,
    });
  if (!challenge.accepts.every((r) => matchesMax(r, max))) {
    throw refuse('Not every x402 payment requirement of the upstream matches maxPayment (same network and asset, amount at most maxPayment.amount)');
  }
  const candidates = challenge.accepts.filter(payable);
  if (candidates.length === 0) {
    throw refuse('No x402 payment requirement of the upstream can be paid (scheme exact by EIP-3009 or upto by Permit2, maxTimeoutSeconds at most 3600)');
  }
  return candidates.reduce((best, r) => (BigInt(r.amount) < BigInt(best.amount) ? r : best));
}
