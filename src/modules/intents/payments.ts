import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import type { Caller } from '../../platform/request-context.js';
import { Reason } from '../../x402/facilitator/reasons.js';
import type { SettleOutcome, VerifyOutcome } from '../../x402/server/payment-steps.js';

// What the intents module needs from the payment side, as two small ports. The adapters over the
// x402 wiring and the chain index live in gateway.ts; tests may wrap them (fault injection).

/** What an intent charges: fixed by its merchant and amount. */
export interface Charge {
  network: string;
  asset: string;
  payTo: string;
  /** Atomic units, integer string. */
  amount: string;
  maxTimeoutSeconds: number;
  resource: { url: string; description: string; mimeType: string; serviceName: string };
}

/**
 * The facilitator's settle refusals that end before any transfer, or with one that reverted: all of its reason
 * codes but these, which say an authorization was used, or leave what moved unknown. A refused settle moved
 * nothing for the intent exactly when its reason is one of these.
 */
const REFUSED_BEFORE_TRANSFER: ReadonlySet<string> = new Set(
  Object.values(Reason).filter((code) => !([Reason.nonceAlreadyUsed, Reason.transferEventMismatch, Reason.settlementPending, Reason.paymentIdentifierConflict] as string[]).includes(code)),
);
export const refusedBeforeTransfer = (reason: string | null | undefined): boolean => reason != null && REFUSED_BEFORE_TRANSFER.has(reason);

export interface PaymentRail {
  /** The x402 v2 payment-required object for a charge, and its PAYMENT-REQUIRED header value. */
  challenge(charge: Charge, error?: string): Promise<{ paymentRequired: PaymentRequired; header: string }>;
  /** Decodes a PAYMENT-SIGNATURE (or X-PAYMENT) header; null when it is not a payment payload. */
  decode(header: string): PaymentPayload | null;
  /** The requirement of the challenge the payload answers exactly; null when none matches. */
  select(paymentRequired: PaymentRequired, payload: PaymentPayload): PaymentRequirements | null;
  /** `caller`, here and in settle: the request it is for (its id to the facilitator, its route on the gas metric). */
  verify(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<VerifyOutcome>;
  /** `record` names the settle: its retries and the reconciler's claim on the chain agree on it. */
  settle(payload: PaymentPayload, requirements: PaymentRequirements, record: string, caller?: Caller): Promise<SettleOutcome>;
  /** PAYMENT-RESPONSE header value. */
  encodeResponse(response: SettleResponse): string;
}

/** One submitted authorization as the intent expects it to pay. */
export interface ExpectedAuthorization {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  /** Atomic units, integer string. */
  amount: string;
  validBefore: number;
}

/** What the chain says of one authorization, pinned to one block and at the finality depth. */
export type ChainOutcome =
  /** Its own transfer paid exactly the intent. */
  | { kind: 'paid'; transactionHash: string; logIndex: number; blockTimestamp: number }
  /** Used by a transaction whose transfer paid something else: it can never pay the intent. */
  | { kind: 'spent'; transactionHash: string }
  /** Unused past validBefore by the chain's time: it can never move money. */
  | { kind: 'dead' }
  /** Not decided yet; `used`: the token marks it used but its transaction is not final (or not found) yet. */
  | { kind: 'open'; used: boolean };

/** Reads of the chain, and the claim that makes one transfer pay one intent; both throw when unreachable. */
export interface PaymentChain {
  outcome(authorization: ExpectedAuthorization): Promise<ChainOutcome>;
  /** Takes the transfer for `record` (chain_payment_uses): false when something else already holds it. */
  claim(authorization: ExpectedAuthorization, transactionHash: string, logIndex: number, record: string): Promise<boolean>;
}

/** The EIP-3009 authorization inside an exact-EVM payload, normalized as the indexer stores it. */
export interface SignedAuthorization {
  payer: string;
  nonce: string;
  validBefore: number;
}

const authorizationSchema = z.object({
  from: z.string().refine((value) => isAddress(value, { strict: false })),
  nonce: z.string().regex(/^0x[0-9a-fA-F]{64}$/),
  validBefore: z.string().regex(/^\d{1,78}$/),
});

export function authorizationOf(payload: PaymentPayload): SignedAuthorization | null {
  const parsed = authorizationSchema.safeParse((payload.payload as { authorization?: unknown } | undefined)?.authorization);
  if (!parsed.success) return null;
  return { payer: getAddress(parsed.data.from), nonce: parsed.data.nonce.toLowerCase(), validBefore: safeSeconds(parsed.data.validBefore) };
}

// uint256 seconds; anything past 2^53 is "never expires" for our purposes.
const safeSeconds = (value: string) => Number(BigInt(value) > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : value);
