// The pages' wording of times and amounts (web/src/shared/format.ts), at its boundaries: an expiry says
// "Expires in …" only while it is ahead and "Expired … ago" from the instant it passes; typed dollars become
// whole cents or nothing.
import { describe, expect, it } from 'vitest';
import { expiry, relative, symbolAmount, usdCents } from '../../web/src/shared/format.js';

const now = Date.parse('2026-01-01T12:00:00Z');
const at = (ms: number) => new Date(now + ms).toISOString();

describe('expiry wording', () => {
  it.each([
    [4 * 60_000, 'Expires in 4 min'],
    [1_500, 'Expires in 2 s'], // rounded up: never "in 0 s" while still ahead
    [1, 'Expires in 1 s'],
    [0, 'Expired 0 s ago'], // the instant it passes
    [-300, 'Expired 0 s ago'],
    [-3 * 60_000, 'Expired 3 min ago'],
    [-2 * 3_600_000, 'Expired 2 h ago'],
    [-3 * 86_400_000, 'Expired 3 d ago'],
    [30 * 86_400_000, 'Expires in 30 d'],
  ])('%i ms from now → %s', (offset, said) => {
    expect(expiry(at(offset), now)).toBe(said);
  });

  it('leaves the plain relative wording as it was', () => {
    expect(relative(at(4 * 60_000), now)).toBe('in 4 min');
    expect(relative(at(-3 * 3_600_000), now)).toBe('3 h ago');
  });
});

describe('amounts', () => {
  it.each([
    ['12.50', 1250],
    ['12.5', 1250],
    [' 12 ', 1200],
    ['0.01', 1],
    ['1.234', null],
    ['1,50', null],
    ['-1', null],
    ['', null],
    ['1e3', null],
  ])('dollars %j → cents %j', (typed, cents) => {
    expect(usdCents(typed)).toBe(cents);
  });

  it('names a balance with its symbol and at least two decimals', () => {
    expect(symbolAmount('2500000', 6, 'USDG')).toBe('2.50 USDG');
    expect(symbolAmount('1234567', 6, 'USDG')).toBe('1.234567 USDG');
    expect(symbolAmount('0', 6, 'USDG')).toBe('0.00 USDG');
  });
});
