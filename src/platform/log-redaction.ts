// What an error's text may not carry wherever it goes (a log line, a /ready reason, an error answer, the
// operator CLI): an RPC URL's path and query (providers put the API key there, `/v2/KEY` or `?apikey=KEY`)
// and its user info, a request body, or a signature (viem's errors quote them: "URL: …", "Request body: {…}",
// the raw call arguments). The host stays, for diagnosis. This file is the one redactor: every error logged
// through the root logger passes redactError; readiness results (withDeadline), error answers (the error
// handler), loop and admin-socket errors pass redactText, mostly through errorText.
import pino from 'pino';

/** Scheme, user info (up to the last `@`, a password may hold one), host[:port], then path, query and fragment. */
const URL_PATTERN = /\b((?:https?|wss?):\/\/)([^\s/?#"'`]*@)?([^\s/?#"'`]+)[^\s"'`)]*/gi;
const REQUEST_BODY = /(Request body:\s*)[^\n]*/gi;
/** 65-byte signatures and anything longer (calldata that embeds one). */
const LONG_HEX = /0x[0-9a-fA-F]{128,}/g;

export function redactText(text: string): string {
  return text
    .replace(REQUEST_BODY, '$1[redacted]')
    .replace(URL_PATTERN, (_url, scheme: string, userInfo: string | undefined, host: string) => `${scheme}${userInfo ? '[redacted]@' : ''}${host}/[redacted]`)
    .replace(LONG_HEX, (hex) => `0x[${(hex.length - 2) / 2} bytes redacted]`);
}

/** An error as text that an operator or a client may see: its message, redacted. */
export function errorText(error: unknown): string {
  return redactText(error instanceof Error ? error.message : String(error));
}

/** Redacts every string inside a serialized error (message, stack, viem's details and metaMessages, causes). */
function redactDeep(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactText(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, key === 'body' || key === 'args' ? '[redacted]' : redactDeep(item, depth + 1)]));
}

/** Every string inside a plain value (a readiness check's detail), redacted. */
export function redactValue<T>(value: T): T {
  return redactDeep(value, 0) as T;
}

export function redactError(error: unknown): unknown {
  const serialized = error instanceof Error ? pino.stdSerializers.errWithCause(error) : error;
  return redactDeep(serialized, 0);
}
