import { describe, expect, it } from 'vitest';
import { isoTime } from './iso-time.js';

describe('isoTime', () => {
  it('writes what toISOString writes: random instants, minute edges, before 1970, either side of the cache', () => {
    let seed = 11;
    const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const instants = [0, -1, 59_999, 60_000, 60_001, Date.UTC(2026, 10, 30, 23, 59, 59, 999), Date.UTC(1000, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999)];
    for (let n = 0; n < 20_000; n++) {
      const base = Math.floor((next() - 0.3) * 8e12);
      // runs within one minute (the cache's case) and jumps between minutes
      instants.push(base, base + Math.floor(next() * 1000), base + 59_000, base - 1);
    }
    for (const ms of instants) expect(isoTime(new Date(ms)), String(ms)).toBe(new Date(ms).toISOString());
  });

  it('leaves years outside 1000–9999 to toISOString, and refuses an invalid date as it does', () => {
    for (const ms of [Date.UTC(999, 11, 31, 23, 59, 59, 999), Date.UTC(10000, 0, 1), -8.64e15, 8.64e15]) {
      expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
    }
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});
