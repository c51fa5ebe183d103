import { describe, expect, it } from 'vitest';
import { newId, newIds, UUID_PATTERN } from './ids.js';

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

describe('newIds', () => {
  it('makes ids as newId does, from one draw: distinct, valid, counting up within the millisecond and on from it', () => {
    const now = Date.UTC(2026, 0, 2);
    const ids = [...newIds(300, now), newId(now)];
    expect(new Set(ids).size).toBe(301);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) {
      expect(id).toMatch(UUID_PATTERN);
      expect(id.slice(14, 15)).toBe('7');
      expect(['8', '9', 'a', 'b']).toContain(id.slice(19, 20));
      expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
    }
    // The random tails differ: no two ids share the bytes past their sequence.
    expect(new Set(ids.map((id) => id.slice(19))).size).toBe(301);
  });
});
