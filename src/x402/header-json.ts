// x402 headers carry base64-encoded JSON. Whoever sent it (a payer, an upstream seller) is a
// stranger: the JSON passes the service's JSON guard before anything reads it.
import { parseGuardedJson } from '../platform/json-guard.js';

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/** Decodes one x402 header value; throws JsonGuardError (limits) or another Error (not base64 JSON). */
export function decodeHeaderJson(value: string): unknown {
  const trimmed = value.trim();
  if (!BASE64.test(trimmed)) throw new Error('not base64');
  return parseGuardedJson(Buffer.from(trimmed, 'base64').toString('utf8'));
}
