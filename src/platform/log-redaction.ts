// What a logged error may not carry: an RPC URL's path and query (providers put the API key there), a
// request body, or a signature (viem's errors quote all three: "URL: …", "Request body: {…}", the raw call
// arguments). Every error logged through the root logger passes redactError; the host stays, for diagnosis.
import pino from 'pino';

const URL_PATTERN = /\b((?:https?|wss?):\/\/[^\s/?#"'`]+)[^\s"'`)]*/gi;
const REQUEST_BODY = /(Request body:\s*)[^\n]*/gi;
/** 65-byte signatures and anything longer (calldata that embeds one). */
const LONG_HEX = /0x[0-9a-fA-F]{128,}/g;

export function redactText(text: string): string {
  return text
    .replace(REQUEST_BODY, '$1[redacted]')
    .replace(URL_PATTERN, (_url, origin: string) => `${origin}/[redacted]`)
    .replace(LONG_HEX, (hex) => `0x[${(hex.length - 2) / 2} bytes redacted]`);
}

/** Redacts every string inside a serialized error (message, stack, viem's details and metaMessages, causes). */
function redactDeep(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactText(value);
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => redactDeep(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, key === 'body' || key === 'args' ? '[redacted]' : redactDeep(item, depth + 1)]));
}

export function redactError(error: unknown): unknown {
  const serialized = error instanceof Error ? pino.stdSerializers.errWithCause(error) : error;
  return redactDeep(serialized, 0);
}
