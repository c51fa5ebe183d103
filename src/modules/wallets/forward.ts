import { ApiError } from '../../platform/http/errors.js';

// What pay-and-call sends upstream: the caller's headers minus those that belong to this hop or to
// us, and the body serialized once so its size can be checked against the configured limit.

/** Hop-by-hop (RFC 9110 §7.6.1) and headers the transport computes itself. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);
/** Payment headers are ours to set; a caller-supplied one would be replayed or confused with ours. */
const PAYMENT_HEADERS = new Set(['payment-signature', 'x-payment']);
/** Bodies come back decoded (JSON/text); a compressed body would only reach the caller as base64 bytes. */
const ENCODING_HEADERS = new Set(['accept-encoding']);
/** Our own credentials (wallet, management, OAuth tokens) never go upstream, under any header. */
const OUR_CREDENTIAL = /svc_(wallet|api|oauth)_/;

export interface ForwardedRequest {
  headers: Record<string, string>;
  body: string | undefined;
}

export function forwardedRequest(headers: Record<string, string> | undefined, body: unknown, maxBodyBytes: number): ForwardedRequest {
  const out: Record<string, string> = {};
  const entries = Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value] as const);
  const connectionListed = new Set(
    entries
      .filter(([name]) => name === 'connection')
      .flatMap(([, value]) => value.split(',').map((token) => token.trim().toLowerCase())),
  );
  for (const [name, value] of entries) {
    if (HOP_BY_HOP.has(name) || connectionListed.has(name) || PAYMENT_HEADERS.has(name) || ENCODING_HEADERS.has(name)) continue;
    if (OUR_CREDENTIAL.test(value)) continue;
    out[name] = value;
  }

  let serialized: string | undefined;
  if (body !== undefined && body !== null) {
    serialized = typeof body === 'string' ? body : JSON.stringify(body);
    out['content-type'] ??= typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
    const size = Buffer.byteLength(serialized);
    if (size > maxBodyBytes) {
      throw new ApiError(413, 'request_too_large', `Forwarded body is ${size} bytes; the limit is ${maxBodyBytes}`, { limit: maxBodyBytes, size });
    }
  }
  out['user-agent'] ??= 'Tollgate-pay-and-call/1';
  return { headers: out, body: serialized };
}

/** The payment record keeps origin and path only: query strings often carry secrets. */
export function resourceOf(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.slice(0, 200);
  }
}
