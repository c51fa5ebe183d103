import { createHash } from 'node:crypto';
import { Challenge, PaymentRequest, Receipt } from 'mppx';
import { Types } from 'mppx/evm';
import { getAddress } from 'viem';
import { decodeBase64Json, deserializeCredential } from './credential-wire.js';
import { sameRequest } from './same-request.js';
import { AuthorizationPayloadSchema, ChallengeSchema, ChargeRequestSchema } from './schemas.js';

/**
 * The relay's request body, `{ credential, request }`, turned into one checked, normalized payment.
 * mppx does the wire work: `Credential.deserialize` for the `Payment …` string (its steps, with a faster
 * base64url decoder and the JSON guard: credential-wire.ts), `Challenge.Schema` for a credential sent as
 * an object, `Types.ChargeRequestSchema` / `Types.AuthorizationPayloadSchema` for the evm charge shapes
 * (the three with their objects compiled: schemas.ts), and `Types.challengeHash` for the nonce binding.
 * The request is compared with the challenge's by same-request.ts. What is left here is the
 * relay's own policy: which method and asset it serves, and that every part agrees with the others.
 * The challenge's HMAC is not checked: it is the merchant's (we have no secret). Signature, time window,
 * chain state and balance are checked later, against the chain.
 */

export interface RelayAsset {
  chainId: number;
  network: string;
  address: `0x${string}`;
  symbol: string;
  decimals: number;
  /** The token's EIP-712 domain. */
  name: string;
  version: string;
}

export interface RelayPayment {
  challengeId: string;
  realm: string;
  /** The credential's source (a did:pkh), as sent; null when the credential has none. */
  source: string | null;
  /** Addresses here are checksummed (once, in parsing: each checksum is a keccak or a cache lookup). */
  payer: `0x${string}`;
  request: { amount: string; currency: `0x${string}`; recipient: `0x${string}`; chainId: number; decimals: number };
  authorization: { from: `0x${string}`; to: `0x${string}`; value: string; validAfter: string; validBefore: string; nonce: `0x${string}` };
  signature: `0x${string}`;
  /** A stable digest of the whole credential + request, for idempotency comparison (same credential = same digest). */
  fingerprint: string;
}

export type RelayRejection = { status: 400 | 422; code: string; message: string };

/** The receipt the relay answers on a successful broadcast: mppx's Receipt plus the evm method's fields. */
export type RelayReceipt = Receipt.Receipt & { challengeId: string; chainId: number; method: 'evm'; status: 'success' };

const UINT256_MAX = 2n ** 256n - 1n;

const reject = (status: 400 | 422, code: string, message: string): RelayRejection => ({ status, code, message });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Atomic-unit strings (already `^\d+$` by mppx's schemas) in canonical form, within uint256. */
const atomic = (value: string): string | null => {
  const n = BigInt(value);
  return n <= UINT256_MAX ? n.toString() : null;
};

const firstIssue = (error: { issues?: { path?: PropertyKey[]; message: string }[] }): string => {
  const issue = error.issues?.[0];
  if (!issue) return 'invalid';
  const path = issue.path?.length ? `${issue.path.map(String).join('.')}: ` : '';
  return `${path}${issue.message}`;
};

export function parseRelayBody(body: unknown, asset: RelayAsset): RelayPayment | RelayRejection {
  if (!isObject(body)) return reject(400, 'invalid_request', 'The body must be a JSON object { credential, request }');
  if (body.credential === undefined || body.credential === null) return reject(400, 'invalid_request', 'credential is required');
  if (body.request === undefined || body.request === null) return reject(400, 'invalid_request', 'request is required');

  const credential = parseCredential(body.credential);
  if (typeof credential === 'string') return reject(400, 'invalid_credential', credential);
  const { challenge } = credential;
  if (!isObject(credential.payload)) return reject(400, 'invalid_credential', 'credential.payload must be an object');

  const parsedRequest = ChargeRequestSchema.safeParse(body.request);
  if (!parsedRequest.success) return reject(400, 'invalid_payment_request', `request is not an evm charge request (${firstIssue(parsedRequest.error)})`);
  const request = parsedRequest.data;
  const amount = atomic(request.amount);
  if (amount === null || amount === '0') return reject(400, 'invalid_payment_request', 'request.amount must be a positive uint256');

  // Method, intent and credential type: anything but evm/charge/authorization is another protocol's credential.
  if (challenge.method !== Types.paymentMethod || challenge.intent !== Types.chargeIntent) {
    return reject(422, 'unsupported_method', `Only method "evm", intent "charge" is supported (got "${challenge.method}", "${challenge.intent}")`);
  }
  // Another credential type of the evm method (permit2, transaction, hash) is unsupported; no type at all is malformed.
  const payloadType = credential.payload.type;
  if (typeof payloadType === 'string' && payloadType !== 'authorization') {
    return reject(422, 'unsupported_method', `Only the "authorization" credential type is supported (got "${payloadType}")`);
  }
  // EIP-3009 moves one amount to one recipient; the evm charge spec forbids splits with it.
  if (request.methodDetails.splits?.length) {
    return reject(422, 'unsupported_method', '"authorization" credentials cannot pay a request with splits');
  }

  const parsedPayload = AuthorizationPayloadSchema.safeParse(credential.payload);
  if (!parsedPayload.success) return reject(400, 'invalid_credential', `The payload is not an evm authorization (${firstIssue(parsedPayload.error)})`);
  const payload = parsedPayload.data;
  const value = atomic(payload.value);
  const validAfter = atomic(payload.validAfter);
  const validBefore = atomic(payload.validBefore);
  if (value === null || validAfter === null || validBefore === null) return reject(400, 'invalid_credential', 'The authorization has a number beyond uint256');

  if (!sameAddress(request.currency, asset.address) || request.methodDetails.chainId !== asset.chainId) {
    return reject(422, 'unsupported_asset', `Only ${asset.symbol} ${asset.address} on chain ${asset.chainId} is supported`);
  }
  // decimals is optional in mppx's schema (a display aid); when sent it must be the asset's.
  if (request.methodDetails.decimals !== undefined && request.methodDetails.decimals !== asset.decimals) {
    return reject(422, 'unsupported_asset', `${asset.symbol} has ${asset.decimals} decimals (request says ${request.methodDetails.decimals})`);
  }

  if (!sameRequest(body.request, challenge.request)) {
    return reject(422, 'request_mismatch', 'request differs from the request in the credential’s challenge');
  }
  if (!sameAddress(payload.to, request.recipient)) return reject(422, 'request_mismatch', 'The authorization pays another address than request.recipient');
  if (value !== amount) return reject(422, 'request_mismatch', `The authorization moves ${value}, the request asks ${amount}`);

  if (payload.nonce.toLowerCase() !== Types.challengeHash(challenge).toLowerCase()) {
    return reject(422, 'challenge_binding_mismatch', 'The authorization nonce is not keccak256(challenge.id ‖ challenge.realm)');
  }

  const payer = getAddress(payload.from);
  const source = credential.source ?? null;
  if (source !== null && !sourceIs(source, asset.chainId, payer)) {
    return reject(400, 'invalid_credential', `source ${source} is not the payer ${payer} on chain ${asset.chainId}`);
  }

  const sentRequest = body.request;
  // payload.to is the recipient (checked above, any case): one checksum for both.
  const recipient = getAddress(request.recipient);
  let fingerprint: string | undefined;
  return {
    challengeId: challenge.id,
    realm: challenge.realm,
    source,
    payer,
    request: { amount, currency: getAddress(request.currency), recipient, chainId: asset.chainId, decimals: asset.decimals },
    authorization: { from: payer, to: recipient, value, validAfter, validBefore, nonce: payload.nonce as `0x${string}` },
    signature: payload.signature as `0x${string}`,
    // Only broadcast needs it (validate records nothing): computed on first use, a fifth of parsing's cost.
    get fingerprint() {
      return (fingerprint ??= fingerprintOf(challenge, payload, source, sentRequest));
    },
  };
}

/** The receipt of a settled payment, in mppx's Receipt shape plus the evm charge method's challengeId and chainId. */
export function relayReceipt(parameters: { challengeId: string; chainId: number; reference: string; timestamp: string }): RelayReceipt {
  // Receipt.from validates the base fields (status, RFC 3339 timestamp) and keeps the method's extra ones.
  return Receipt.from({
    challengeId: parameters.challengeId,
    chainId: parameters.chainId,
    method: Types.paymentMethod,
    reference: parameters.reference,
    status: 'success',
    timestamp: parameters.timestamp,
  }) as RelayReceipt;
}

type ParsedCredential = { challenge: Challenge.Challenge; payload: unknown; source?: string };

/**
 * A credential as mppx reads it, or why not. The string is the Authorization header value; an object is
 * either mppx's parsed credential (challenge.request an object) or the decoded wire JSON (challenge.request
 * the base64url string), both read through mppx's challenge schema.
 */
function parseCredential(input: unknown): ParsedCredential | string {
  if (typeof input === 'string') {
    let credential: ReturnType<typeof deserializeCredential>;
    try {
      credential = deserializeCredential(input);
    } catch (error) {
      return `credential is not a Payment credential (${(error as Error).message})`;
    }
    // mppx keeps any truthy source; a did:pkh is a string.
    if (credential.source !== undefined && typeof credential.source !== 'string') return 'credential.source must be a string';
    return credential as ParsedCredential;
  }
  if (!isObject(input)) return 'credential must be a credential object or a "Payment …" string';
  if (!isObject(input.challenge)) return 'credential.challenge must be an object';
  if (input.source !== undefined && typeof input.source !== 'string') return 'credential.source must be a string';
  const { request } = input.challenge;
  let decoded: unknown = request;
  if (typeof request === 'string') {
    try {
      decoded = decodeBase64Json(request);
    } catch {
      return 'credential.challenge.request is not base64url JSON';
    }
  }
  const challenge = ChallengeSchema.safeParse({ ...input.challenge, request: decoded });
  if (!challenge.success) return `credential.challenge is not a Payment challenge (${firstIssue(challenge.error)})`;
  return { challenge: challenge.data as Challenge.Challenge, payload: input.payload, ...(input.source !== undefined && { source: input.source as string }) };
}

/** The request with its address fields lowercased (only those present: nothing is added): the fingerprint's form, which sameRequest compares without building. */
export function normalizedRequest(request: unknown): unknown {
  if (!isObject(request)) return request;
  const lower = (object: Record<string, unknown>, key: string) =>
    typeof object[key] === 'string' ? { [key]: (object[key] as string).toLowerCase() } : {};
  const details = request.methodDetails;
  return {
    ...request,
    ...lower(request, 'currency'),
    ...lower(request, 'recipient'),
    ...(isObject(details) && {
      methodDetails: {
        ...details,
        ...lower(details, 'permit2Address'),
        ...(Array.isArray(details.splits) && {
          splits: details.splits.map((split) => (isObject(split) ? { ...split, ...lower(split, 'recipient') } : split)),
        }),
      },
    }),
  };
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/** did:pkh:eip155:<chainId>:<address> (mppx's Types.toSource), the address in any hex case. */
function sourceIs(source: string, chainId: number, payer: `0x${string}`): boolean {
  return source.toLowerCase() === Types.toSource({ address: payer, chainId }).toLowerCase();
}

/**
 * SHA-256 of the credential and request as mppx parsed them, in canonical JSON: the same credential
 * gives the same digest whether it came as a string or an object, and whatever its key order.
 * The challenge's `meta` is left out: it is only the decoded form of `opaque`, which is kept.
 */
function fingerprintOf(challenge: Challenge.Challenge, payload: Types.AuthorizationPayload, source: string | null, request: unknown): string {
  const { meta, ...rest } = challenge;
  const opaque = rest.opaque ?? (meta !== undefined ? PaymentRequest.serialize(meta) : undefined);
  const credential = { challenge: { ...rest, ...(opaque !== undefined && { opaque }) }, payload, source };
  const canonical = PaymentRequest.serialize({ credential, request: normalizedRequest(request) });
  return createHash('sha256').update(canonical).digest('hex');
}
