import { describe, expect, it } from 'vitest';
import { UUID_PATTERN } from '../ids.js';
import { requestIdMaker } from './request-ids.js';

const version = (id: string) => id.slice(14, 15);
const variant = (id: string) => id.slice(19, 20);

describe('request ids', () => {
  it('are version 8 UUIDs, distinct, one prefix per maker and a counter after it', () => {
    const next = requestIdMaker();
    const ids = Array.from({ length: 5000 }, next);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(id).toMatch(UUID_PATTERN);
      expect(version(id)).toBe('8');
      expect(['8', '9', 'a', 'b']).toContain(variant(id));
    }
    expect(new Set(ids.map((id) => id.slice(0, 24))).size).toBe(1);
    expect(ids.slice(0, 3).map((id) => id.slice(24))).toEqual(['000000000000', '000000000001', '000000000002']);
  });

  it('differ between makers (processes): each draws its own random prefix', () => {
    const prefixes = Array.from({ length: 50 }, () => requestIdMaker()().slice(0, 24));
    expect(new Set(prefixes).size).toBe(50);
  });

  it('draw a new prefix when the 48-bit counter is spent, so no id repeats', () => {
    const next = requestIdMaker(2 ** 48 - 1);
    const [last, wrapped] = [next(), next()];
    expect(last.slice(24)).toBe('ffffffffffff');
    expect(wrapped.slice(24)).toBe('000000000000');
    expect(wrapped.slice(0, 24)).not.toBe(last.slice(0, 24));
    expect(wrapped).toMatch(UUID_PATTERN);
    expect(version(wrapped)).toBe('8');
  });
});
