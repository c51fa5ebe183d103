import { customType } from 'drizzle-orm/pg-core';
import { assertSafeJson } from './json-guard.js';

/**
 * jsonb with the JSON guard's last check before every write (depth, U+0000, lone surrogates): the
 * edges refuse such input with a 400 first; this keeps a missed path from reaching the database.
 */
export const guardedJsonb = customType<{ data: unknown; driverData: string }>({
  dataType: () => 'jsonb',
  toDriver(value) {
    assertSafeJson(value);
    return JSON.stringify(value);
  },
  fromDriver(value) {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  },
});

/** The same last check for a JSON value bound into raw SQL (`${jsonText(value)}::jsonb`). */
export function jsonText(value: unknown): string {
  assertSafeJson(value);
  return JSON.stringify(value);
}
