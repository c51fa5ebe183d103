import { describe, expect, it } from 'vitest';
import { parseGrantArgs } from './grant-args.js';

describe('parseGrantArgs', () => {
  it('takes a user, whole cents and a note (a default note without one)', () => {
    expect(parseGrantArgs({ sub: 'alice', cents: '2500', note: 'welcome' })).toEqual({ sub: 'alice', cents: 2500, note: 'welcome' });
    expect(parseGrantArgs({ sub: 'alice', cents: 1 })).toEqual({ sub: 'alice', cents: 1, note: 'operator grant' });
  });

  it.each([
    [{ cents: '5' }, '--sub is required'],
    [{ sub: '', cents: '5' }, '--sub is required'],
    [{ sub: 'alice', cents: '1.5' }, '--cents must be a whole number of cents ≥ 1'],
    [{ sub: 'alice', cents: '0' }, '--cents must be a whole number of cents ≥ 1'],
    [{ sub: 'alice', cents: '-3' }, '--cents must be a whole number of cents ≥ 1'],
    [{ sub: 'alice' }, '--cents must be a whole number of cents ≥ 1'],
  ])('refuses %o', (args, refused) => {
    expect(parseGrantArgs(args)).toEqual({ refused });
  });
});
