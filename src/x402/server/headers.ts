// x402 HTTP headers: reading the client's payment and writing the challenge and settlement answers.
// Encoding is the SDK's (standard base64 of JSON); decoding passes the JSON guard, validation is ours.
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types';
import { z } from 'zod';
import { canonicalJson } from '../../platform/canonical-json.js';
import { JsonGuardError } from '../../platform/json-guard.js';
import { decodeHeaderJson } from '../header-json.js';
import { paymentPayloadSchema } from '../payload.js';
import { PaymentHeaderError } from './errors.js';

export const PAYMENT_SIGNATURE = 'payment-signature';
/** Legacy alias of PAYMENT-SIGNATURE (x402 v1 clients and older SDKs). */
export const X_PAYMENT = 'x-payment';
const MAX_HEADER_CHARS = 16 * 1024;

type HeaderBag = Record<string, string | string[] | undefined>;

/**
 * The payment a request carries, from PAYMENT-SIGNATURE or else X-PAYMENT; null when there is none.
 * Throws PaymentHeaderError when the header is present but not a valid x402 v2 payment payload.
 */
export function readPaymentHeader(headers: HeaderBag): PaymentPayload | null {
  const raw = first(headers[PAYMENT_SIGNATURE]) ?? first(headers[X_PAYMENT]);
  if (raw === undefined || raw.trim() === '') return null;
  if (raw.length > MAX_HEADER_CHARS) throw new PaymentHeaderError('payment header is too large');
  let decoded: unknown;
  try {
    decoded = decodeHeaderJson(raw);
  } catch (error) {
    throw new PaymentHeaderError(error instanceof JsonGuardError ? `payment header: ${error.message}` : 'payment header is not base64-encoded JSON');
  }
  if (decoded && typeof decoded === 'object' && (decoded as { x402Version?: unknown }).x402Version !== 2) {
    throw new PaymentHeaderError(`x402Version ${String((decoded as { x402Version?: unknown }).x402Version)} is not supported; use 2`);
  }
  const parsed = paymentPayloadSchema.safeParse(decoded);
  if (!parsed.success) throw new PaymentHeaderError(`payment header is not an x402 v2 payment payload: ${z.prettifyError(parsed.error)}`);
  return parsed.data as PaymentPayload;
}

export const encodeChallengeHeader = (paymentRequired: PaymentRequired) => encodePaymentRequiredHeader(paymentRequired);
/**
 * PAYMENT-RESPONSE for a settlement, its keys in one order: the same settlement read back from jsonb (which
 * reorders keys) and held in memory encode to the same header, so every copy of a payment gets the same bytes.
 */
export const encodeSettlementHeader = (settlement: SettleResponse) => encodePaymentResponseHeader(JSON.parse(canonicalJson(settlement)) as SettleResponse);

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
