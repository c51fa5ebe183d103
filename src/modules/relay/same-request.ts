/**
 * Whether the request a merchant sent is the one in the credential's challenge, as the charge spec reads
 * it: addresses by their 20-byte value (any hex case), everything else exactly, key order aside. Unknown
 * fields count too: a request the relay does not fully understand is not the same request.
 *
 * It answers what comparing the two as RFC 8785 canonical JSON answers (with the address fields
 * lowercased; fingerprintOf still builds that text), without building either text: the two serializations
 * were a sixth of a validate's parsing cost. As in canonicalization, a non-finite number or a bigint is a
 * TypeError.
 */

type Same = (a: unknown, b: unknown) => boolean;
/** How one field's two values compare, where that differs from plain JSON equality. */
type Fields = (key: string) => Same | undefined;

export const sameRequest: Same = (a, b) => sameJson(a, b, requestFields);

const sameAddress: Same = (a, b) => (typeof a === 'string' && typeof b === 'string' ? a.toLowerCase() === b.toLowerCase() : sameJson(a, b));
const splitFields: Fields = (key) => (key === 'recipient' ? sameAddress : undefined);
const sameSplits: Same = (a, b) =>
  Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((split, i) => sameJson(split, b[i], splitFields)) : sameJson(a, b);
const methodDetailsFields: Fields = (key) => (key === 'permit2Address' ? sameAddress : key === 'splits' ? sameSplits : undefined);
const sameMethodDetails: Same = (a, b) => sameJson(a, b, methodDetailsFields);
const requestFields: Fields = (key) => (key === 'currency' || key === 'recipient' ? sameAddress : key === 'methodDetails' ? sameMethodDetails : undefined);

/** JSON equality (objects by key set, arrays in order, -0 = 0, an undefined member is no member); `fields` only at this level. */
function sameJson(a: unknown, b: unknown, fields?: Fields): boolean {
  finite(a);
  finite(b);
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  let members = 0;
  for (const key of Object.keys(x)) {
    if (x[key] === undefined) continue;
    members += 1;
    if (!Object.hasOwn(y, key) || y[key] === undefined) return false;
    if (!(fields?.(key) ?? sameJson)(x[key], y[key])) return false;
  }
  for (const key of Object.keys(y)) if (y[key] !== undefined) members -= 1;
  return members === 0;
}

function finite(value: unknown): void {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('Cannot canonicalize non-finite number');
  if (typeof value === 'bigint') throw new TypeError('Cannot canonicalize bigint');
}
