import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { composeSchema, ConfigError, defineSettings, loadSettings, positiveInt } from './settings.js';

const a = defineSettings({
  env: { A_SIZE: positiveInt(3), A_NAME: z.string().optional() },
  load: (e) => ({ a: { size: e.A_SIZE, name: e.A_NAME ?? null } }),
  problems: (e) => (e.A_NAME === 'bad' ? ['A_NAME: bad'] : []),
  devKeys: (e) => (e.A_NAME ? [] : ['A_NAME']),
});
const b = defineSettings({
  env: { B_ON: z.enum(['0', '1']).default('0') },
  reads: { A_SIZE: a.env.A_SIZE },
  load: (e) => ({ b: e.B_ON === '1' ? e.A_SIZE : 0 }),
  problems: (e) => (e.B_ON === '1' && e.A_SIZE > 5 ? ['B_ON: needs A_SIZE at most 5'] : []),
});

describe('settings pieces', () => {
  const pieces = [a, b] as const;
  const schema = composeSchema(pieces);

  it("compose into one Config of every piece's fields, empty variables unset", () => {
    const { fields, devKeys } = loadSettings(pieces, schema, { A_NAME: '', B_ON: '1' });
    expect(fields).toEqual({ a: { size: 3, name: null }, b: 3 });
    expect(devKeys).toEqual(['A_NAME']);
  });

  it('name every bad variable of every piece together, then every bad combination', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadSettings(pieces, schema, env);
        return [];
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems.map((p) => p.split(':')[0]);
      }
    };
    expect(problems({ A_SIZE: '0', B_ON: '2' })).toEqual(['A_SIZE', 'B_ON']);
    expect(problems({ A_SIZE: '9', B_ON: '1', A_NAME: 'bad' })).toEqual(['A_NAME', 'B_ON']);
  });

  it('refuse a variable declared twice, or read but declared by none', () => {
    expect(() => composeSchema([a, a])).toThrow(/A_SIZE is declared by two pieces/);
    expect(() => composeSchema([b])).toThrow(/A_SIZE is read but declared by no piece/);
  });
});
