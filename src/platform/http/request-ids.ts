import { randomBytes } from 'node:crypto';

// Every request that brings no X-Request-Id of its own gets a new id, so making one must be cheap:
// crypto.randomUUID was ≈ 0.25–0.5 µs of GET /health's ≈ 14 µs (bench/RESULTS.md, bench/health). An id is
// still a UUID (RFC 9562 version 8, whose layout the vendor chooses): 74 bits drawn at random once per
// process, then a 48-bit counter. Two processes (or two runs of one) share a prefix with odds of 2^-74; one
// process counts 2^48 requests before it draws a new prefix. The counter makes no secret of how many requests
// a process answered; an id is a correlation handle, never a credential.

const COUNTER_SPAN = 2 ** 48;

/** A maker of request ids (one per process: src/app.ts); `start` only for tests of the wrap. */
export function requestIdMaker(start = 0): () => string {
  let prefix = newPrefix();
  let counter = start;
  return () => {
    if (counter === COUNTER_SPAN) [prefix, counter] = [newPrefix(), 0];
    const hex = (counter++).toString(16);
    return prefix + '000000000000'.slice(hex.length) + hex;
  };
}

/** `xxxxxxxx-xxxx-8xxx-Vxxx-`: 74 random bits, the version (8) and the variant (binary 10) in their places. */
function newPrefix(): string {
  const bytes = randomBytes(10);
  bytes[6] = 0x80 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
}
