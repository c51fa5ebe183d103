import { Challenge, Constants, Credential, PaymentRequest } from 'mppx';
import { assertSafeJson, parseGuardedJson } from '../../platform/json-guard.js';
import { ChallengeSchema } from './schemas.js';

/**
 * mppx's `Credential.deserialize` (0.11), step for step, with two differences: base64url is decoded by
 * Node (ox's JavaScript decoder was a tenth of a validate's parsing cost) and the decoded JSON passes
 * the service's JSON guard (depth, size, storable strings), as all JSON from a payment header does
 * (a challenge id with U+0000 would otherwise reach a receipt stored as jsonb). The challenge schema
 * is mppx's, compiled (schemas.ts). The same errors as mppx's; credential-wire.test.ts holds it to
 * mppx's answers.
 */

export type WireCredential = { challenge: Challenge.Challenge; payload: unknown; source?: unknown };

const SCHEME = new RegExp(`^${Constants.Schemes.payment}\\s+(.+)$`, 'i');
/** Plain base64url, as mppx writes it: here Node's decoder and mppx's (ox's) give the same bytes. */
const BASE64URL = /^[A-Za-z0-9_-]*$/;
// ox decodes UTF-8 with a TextDecoder too (so a leading BOM is dropped alike).
const utf8 = new TextDecoder();

export function deserializeCredential(header: string): WireCredential {
  const encoded = SCHEME.exec(header)?.[1];
  if (!encoded) throw new Credential.MissingPaymentSchemeError();
  try {
    const parsed = decodeBase64Json(encoded) as { challenge: Record<string, unknown>; payload: unknown; source?: unknown };
    const { opaque: challengeOpaque, request, meta: _meta, ...challengeFields } = parsed.challenge;
    const { meta, opaque } = normalizeOpaque(challengeOpaque);
    const challenge = ChallengeSchema.parse({
      ...challengeFields,
      ...(meta !== undefined && { meta }),
      ...(opaque !== undefined && { opaque }),
      request: decodeBase64Json(request),
    });
    return { challenge: challenge as Challenge.Challenge, payload: parsed.payload, ...(parsed.source ? { source: parsed.source } : {}) };
  } catch {
    throw new Credential.InvalidCredentialEncodingError();
  }
}

/** `PaymentRequest.deserialize`: base64url JSON (throws on anything else), through the JSON guard. */
export function decodeBase64Json(encoded: unknown): unknown {
  if (typeof encoded === 'string' && BASE64URL.test(encoded)) return parseGuardedJson(utf8.decode(Buffer.from(encoded, 'base64url')));
  // Anything else (padding, '+' '/', stray characters, not a string) as mppx decodes it, or fails to.
  const value: unknown = PaymentRequest.deserialize(encoded as string);
  assertSafeJson(value);
  return value;
}

/** mppx's normalizeCredentialOpaque: the legacy object-shaped `opaque` (all string values) becomes meta + its base64url. */
function normalizeOpaque(value: unknown): { meta?: Record<string, string>; opaque?: string } {
  if (value === undefined) return {};
  if (typeof value === 'string') return { opaque: value };
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.values(value).every((entry) => typeof entry === 'string')) {
    throw new Error('Invalid opaque.');
  }
  return { meta: value as Record<string, string>, opaque: PaymentRequest.serialize(value as Record<string, string>) };
}
