import { ApiError } from '../../platform/http/errors.js';
import { parseGuardedJson } from '../../platform/json-guard.js';
import { SafeFetchError, type SafeResponse } from '../../platform/safe-fetch.js';
import { BASE64_MARKER, type UpstreamView } from './pay-schemas.js';

// Shapes an upstream answer for the caller, and turns transport failures into the Wallet API's
// status codes: refusals of the URL are 400, timeouts 504, everything else upstream 502.

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);
const TEXT_TYPES = /^(text\/.+|application\/(xml|javascript|ecmascript|x-www-form-urlencoded|yaml|x-yaml|graphql|x-ndjson)|.+\+xml)$/;
const JSON_TYPES = /^(application\/json|.+\+json)$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

export function upstreamView(response: SafeResponse): UpstreamView {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) if (!HOP_BY_HOP.has(name)) headers[name] = value;
  return { status: response.status, headers, ...shapeBody(response.headers['content-type'], response.body) };
}

/** JSON as JSON, text as a string, anything else base64 behind the `{ encoding: 'base64', data }` marker. */
export function shapeBody(contentType: string | undefined, body: Buffer): Pick<UpstreamView, 'body' | 'bodyEncoding'> {
  if (body.length === 0) return { body: null, bodyEncoding: 'empty' };
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const text = decodeText(body);
  if (text !== null && JSON_TYPES.test(type)) {
    try {
      // The JSON guard (depth, U+0000, lone surrogates); the size is already bounded by the fetch.
      return { body: parseGuardedJson(text, text.length), bodyEncoding: 'json' };
    } catch {
      return { body: text, bodyEncoding: 'text' }; // declared JSON, is not (or is hostile): give the text as it is
    }
  }
  // Untyped bodies count as text when they decode cleanly and hold no NUL bytes.
  if (text !== null && (TEXT_TYPES.test(type) || (type === '' && !text.includes('\0')))) return { body: text, bodyEncoding: 'text' };
  return { body: { encoding: BASE64_MARKER, data: body.toString('base64') }, bodyEncoding: 'base64' };
}

function decodeText(body: Buffer): string | null {
  try {
    return utf8.decode(body);
  } catch {
    return null;
  }
}

/** Maps a safeFetch failure to the Wallet API's answer; `details` rides along (e.g. the payment). */
export function upstreamError(error: unknown, details?: Record<string, unknown>): ApiError {
  // Our own refusal of a hop (the spend policy's host rule) is the answer as it is.
  if (error instanceof ApiError && details === undefined) return error;
  if (!(error instanceof SafeFetchError)) {
    return new ApiError(502, 'upstream_failed', 'The upstream request failed', details);
  }
  const withReason = { reason: error.code, ...details };
  switch (error.code) {
    case 'invalid_url':
      return new ApiError(400, 'invalid_url', 'url is not a valid URL', withReason);
    case 'blocked_scheme':
    case 'blocked_address':
      return new ApiError(400, 'url_not_allowed', `url is not allowed: ${error.message}. Only public https URLs are accepted (http only for PAY_AND_CALL_ALLOW_HOSTS).`, withReason);
    case 'timeout':
      return new ApiError(504, 'upstream_timeout', `The upstream request timed out: ${error.message}`, withReason);
    case 'too_large':
      return new ApiError(502, 'upstream_response_too_large', `The upstream response is too large: ${error.message}`, withReason);
    case 'dns_failure':
      return new ApiError(502, 'upstream_unreachable', `The upstream host could not be resolved: ${error.message}`, withReason);
    case 'too_many_redirects':
      return new ApiError(502, 'upstream_redirect', `The upstream redirected too often (a paid retry is never redirected): ${error.message}`, withReason);
    case 'network_error':
      return new ApiError(502, 'upstream_failed', `The upstream request failed: ${error.message}`, withReason);
  }
}
