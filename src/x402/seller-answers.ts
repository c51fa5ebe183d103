// Reading a seller's x402 answers on the paying side: the challenge of a 402 (PAYMENT-REQUIRED header,
// else the JSON body) and the settlement receipt of a paid answer (PAYMENT-RESPONSE, else the legacy
// X-PAYMENT-RESPONSE). The one parser of each: pay-and-call, tests and benches import these.
//
// A seller is a stranger. Its JSON passes the service's JSON guard (depth, size, no U+0000 or lone
// surrogates) before anything reads it, and then our zod 4 schema: @x402/core's decoders validate
// nothing. So whatever a parser returns can be shown to a caller or stored in jsonb.
import type { PaymentRequired, SettleResponse } from '@x402/core/types';
import { z } from 'zod';
import { assertSafeJson, JsonGuardError, parseGuardedJson } from '../platform/json-guard.js';
import { decodeHeaderJson } from './header-json.js';
import { requirementsSchema } from './payload.js';

/** The seller's answer is not a usable x402 v2 challenge or receipt; `issues` names what is wrong. */
export class SellerAnswerError extends Error {
  constructor(
    message: string,
    readonly issues?: { path: string; message: string }[],
  ) {
    super(message);
    this.name = 'SellerAnswerError';
  }
}

const challengeSchema = z.looseObject({
  x402Version: z.literal(2),
  error: z.string().optional(),
  resource: z.looseObject({ url: z.string() }).optional(),
  accepts: z.array(requirementsSchema.loose()).min(1).max(100),
});

const settlementSchema = z.looseObject({
  success: z.boolean(),
  transaction: z.string().max(200).optional(),
  network: z.string().max(200).optional(),
  payer: z.string().max(200).optional(),
  errorReason: z.string().optional(),
});

type GetHeader = (name: string) => string | null | undefined;

/**
 * The v2 challenge of a 402. `body` is the raw body (Buffer or text) or an already-parsed value;
 * either way it passes the guard. Throws SellerAnswerError.
 */
export function parsePaymentRequired(getHeader: GetHeader, body?: unknown): PaymentRequired {
  const header = getHeader('payment-required');
  let raw: unknown;
  if (header) {
    raw = guarded('the PAYMENT-REQUIRED header', () => decodeHeaderJson(header), 'is not base64 JSON');
  } else if (Buffer.isBuffer(body) || typeof body === 'string') {
    const text = Buffer.isBuffer(body) ? body.toString('utf8') : body;
    raw = guarded('the 402 body', () => parseGuardedJson(text), 'is not JSON (and there is no PAYMENT-REQUIRED header)');
  } else if (body !== undefined && body !== null) {
    raw = guarded('the 402 body', () => (assertSafeJson(body), body), 'is not JSON');
  } else {
    throw new SellerAnswerError('no PAYMENT-REQUIRED header and no JSON body');
  }
  const version = (raw as { x402Version?: unknown } | null)?.x402Version;
  if (version !== undefined && version !== 2) throw new SellerAnswerError(`x402 version ${String(version)} is not supported (only 2)`);
  const parsed = challengeSchema.safeParse(raw);
  if (!parsed.success) throw new SellerAnswerError('it does not match the x402 v2 PaymentRequired shape', issuesOf(parsed.error));
  return parsed.data as unknown as PaymentRequired;
}

/**
 * The settlement receipt of a paid answer; null when the answer carries none. Throws
 * SellerAnswerError when a receipt is there but unusable (not base64 JSON, refused by the guard,
 * not a settle response).
 */
export function parseSettlement(getHeader: GetHeader): (SettleResponse & Record<string, unknown>) | null {
  const header = getHeader('payment-response') ?? getHeader('x-payment-response');
  if (!header) return null;
  const raw = guarded('the PAYMENT-RESPONSE header', () => decodeHeaderJson(header), 'is not base64 JSON');
  const parsed = settlementSchema.safeParse(raw);
  if (!parsed.success) throw new SellerAnswerError('the PAYMENT-RESPONSE header is not an x402 settle response', issuesOf(parsed.error));
  return parsed.data as SettleResponse & Record<string, unknown>;
}

function guarded(what: string, decode: () => unknown, otherwise: string): unknown {
  try {
    return decode();
  } catch (error) {
    throw new SellerAnswerError(error instanceof JsonGuardError ? `${what} is refused by the JSON guard: ${error.message}` : `${what} ${otherwise}`);
  }
}

function issuesOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.slice(0, 20).map((i) => ({ path: i.path.join('.'), message: i.message }));
}
