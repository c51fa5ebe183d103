import { describe, expect, it } from 'vitest';
import { newId, UUID_PATTERN } from './ids.js';

describe('newId', () => {
  it('counts up within one millisecond, so ids made one after another sort in that order', () => {
    const now = Date.UTC(2026, 0, 1);
    const ids = Array.from({ length: 500 }, () => newId(now));
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(UUID_PATTERN);
    expect(ids[0]!.slice(14, 15)).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(ids[0]!.slice(19, 20));
  });

  it('carries the millisecond it was made in', () => {
    const now = Date.UTC(2026, 5, 1, 12);
    expect(parseInt(newId(now).replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  });
});
