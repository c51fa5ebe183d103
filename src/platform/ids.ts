import { randomBytes } from 'node:crypto';

let lastMs = -1;
let sequence = 0;

/**
 * UUIDv7: time-ordered, so primary keys stay index-friendly and "newest first" can sort by id.
 * Layout per RFC 9562: 48-bit unix ms, version 7, 12-bit sequence, variant 10, 62 random bits.
 * Ids made in one millisecond by this process count up (RFC 9562 method 3, seeded at random each
 * millisecond), so two events published one after the other are claimed in that order.
 */
export function newId(now: number = Date.now()): string {
  return idFrom(randomBytes(16), now);
}

/** `count` ids as newId makes them, from one draw of randomness (a batch publish makes up to 1000). */
export function newIds(count: number, now: number = Date.now()): string[] {
  const random = randomBytes(16 * count);
  return Array.from({ length: count }, (_, i) => idFrom(random.subarray(16 * i, 16 * (i + 1)), now));
}

/** Writes the id's timestamp, version, sequence and variant over 16 random bytes (changed in place). */
function idFrom(bytes: Buffer, now: number): string {
  if (now === lastMs && sequence < 0xfff) sequence += 1;
  else [lastMs, sequence] = [now, bytes.readUInt16BE(6) & 0x7ff];
  bytes.writeUIntBE(now, 0, 6);
  bytes.writeUInt16BE(0x7000 | sequence, 6);
  bytes[8] = 0x80 | (bytes[8] & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
