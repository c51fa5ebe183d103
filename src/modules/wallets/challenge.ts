import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { z } from 'zod';
import { ApiError } from '../../platform/http/errors.js';
import type { SafeResponse } from '../../platform/safe-fetch.js';
import type { PayAndCallInput } from './pay-schemas.js';

// Reads an upstream 402 as an x402 v2 challenge and picks the requirement pay-and-call may pay.
// Our own zod 4 schema: @x402/core's header decoders do no validation at all.

const requirementSchema = z.looseObject({
  scheme: z.string().min(1),
  network: z.string().regex(/^[^:\s]+:[^:\s]+$/),
  asset: z.string().min(1),
  amount: z.string().regex(/^\d{1,78}$/),
  payTo: z.string().min(1),
  maxTimeoutSeconds: z.number().int().positive(),
  extra: z.record(z.string(), z.unknown()).default({}),
});
const challengeSchema = z.looseObject({
  x402Version: z.literal(2),
  error: z.string().optional(),
  resource: z.looseObject({ url: z.string() }).optional(),
  accepts: z.array(requirementSchema).min(1).max(100),
});

const badChallenge = (message: string, details?: unknown) => new ApiError(502, 'invalid_challenge', `The upstream answered 402 without a usable x402 v2 challenge: ${message}`, details);

/** The v2 challenge of a 402: the PAYMENT-REQUIRED header, or (as some servers do) the JSON body. */
export function parseChallenge(response: SafeResponse): PaymentRequired {
  let raw: unknown;
  const header = response.headers['payment-required'];
  if (header) {
    try {
      raw = decodePaymentRequiredHeader(header.trim());
    } catch {
      throw badChallenge('the PAYMENT-REQUIRED header is not base64 JSON');
    }
  } else {
    try {
      raw = JSON.parse(response.body.toString('utf8'));
    } catch {
      throw badChallenge('no PAYMENT-REQUIRED header and no JSON body');
    }
  }
  const version = (raw as { x402Version?: unknown } | null)?.x402Version;
  if (version !== undefined && version !== 2) throw badChallenge(`x402 version ${String(version)} is not supported (only 2)`);
  const parsed = challengeSchema.safeParse(raw);
  if (!parsed.success) {
    throw badChallenge('it does not match the x402 v2 PaymentRequired shape', parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
  }
  return parsed.data as unknown as PaymentRequired;
}

/**
 * The requirement to pay: scheme `exact` by EIP-3009 on the same network and asset, amount at most
 * maxPayment.amount, validity at most MAX_AUTHORIZATION_SECONDS; the cheapest such one (the first on
 * a tie). None → 400 with the offers, and nothing is signed.
 */
/**
 * The longest authorization we sign. An upstream asking for more could hold a signature that
 * stays spendable long after it told us the payment was refused.
 */
export const MAX_AUTHORIZATION_SECONDS = 3600;

export function chooseRequirement(challenge: PaymentRequired, max: PayAndCallInput['maxPayment']): PaymentRequirements {
  const limit = BigInt(max.amount);
  const matching = challenge.accepts.filter(
    (r) =>
      r.scheme === 'exact' &&
      r.network === max.network &&
      r.asset.toLowerCase() === max.asset.toLowerCase() &&
      BigInt(r.amount) <= limit &&
      r.maxTimeoutSeconds <= MAX_AUTHORIZATION_SECONDS &&
      (r.extra?.assetTransferMethod === undefined || r.extra.assetTransferMethod === 'eip3009'),
  );
  if (matching.length === 0) {
    throw new ApiError(400, 'payment_requirements_rejected', 'No x402 payment requirement of the upstream matches maxPayment (scheme exact, same network and asset, amount at most maxPayment.amount, maxTimeoutSeconds at most 3600); nothing was signed', {
      x402Version: challenge.x402Version,
      accepts: challenge.accepts,
      maxPayment: max,
    });
  }
  return matching.reduce((best, r) => (BigInt(r.amount) < BigInt(best.amount) ? r : best));
}
