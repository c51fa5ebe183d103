import { describe, expect, it } from 'vitest';
import { checkPaths, combinations, foldsOf, rulesWith, valuesOf } from './optimise.js';
import { quantRules } from '../strategies/rules.js';

const rules = quantRules.parse({
  indicators: { fast: { type: 'ema', period: 3 }, slow: { type: 'ema', period: 8 } },
  entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [] },
  exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
  sizing: { exposure: 0.5 },
});

describe('the search', () => {
  it('steps a parameter without float drift, and walks the grid in order', () => {
    expect(valuesOf({ path: 'sizing.exposure', min: 0.1, max: 0.7, step: 0.2 })).toEqual([0.1, 0.3, 0.5, 0.7]);
    expect(valuesOf({ path: 'stopLossPercent', min: 0.5, max: 1.2, step: 0.1 })).toEqual([0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.2]);
    const grid = combinations({ method: 'grid', trials: 6, seed: 1, parameters: [{ path: 'indicators.fast.period', min: 2, max: 3, step: 1 }, { path: 'indicators.slow.period', min: 6, max: 10, step: 2 }] });
    expect(grid).toEqual([
      { 'indicators.fast.period': 2, 'indicators.slow.period': 6 },
      { 'indicators.fast.period': 2, 'indicators.slow.period': 8 },
      { 'indicators.fast.period': 2, 'indicators.slow.period': 10 },
      { 'indicators.fast.period': 3, 'indicators.slow.period': 6 },
      { 'indicators.fast.period': 3, 'indicators.slow.period': 8 },
      { 'indicators.fast.period': 3, 'indicators.slow.period': 10 },
    ]);
    expect(() => combinations({ method: 'grid', trials: 5, seed: 1, parameters: [{ path: 'indicators.fast.period', min: 2, max: 3, step: 1 }, { path: 'indicators.slow.period', min: 6, max: 10, step: 2 }] })).toThrow(
      'the grid holds 6 combinations, above trials (5)',
    );
  });

  it('draws distinct random trials, the same for the same seed', () => {
    const search = (seed: number) => combinations({ method: 'random', trials: 40, seed, parameters: [{ path: 'indicators.fast.period', min: 2, max: 20, step: 1 }, { path: 'indicators.slow.period', min: 10, max: 100, step: 5 }] });
    const draws = search(7);
    expect(draws).toHaveLength(40);
    expect(new Set(draws.map((d) => JSON.stringify(d))).size).toBe(40);
    expect(search(7)).toEqual(draws);
    expect(search(8)).not.toEqual(draws);
    for (const d of draws) {
      expect(d['indicators.fast.period']! % 1).toBe(0);
      expect((d['indicators.slow.period']! - 10) % 5).toBe(0);
    }
    // A grid smaller than trials: every combination, once.
    expect(combinations({ method: 'random', trials: 100, seed: 3, parameters: [{ path: 'sizing.exposure', min: 0.5, max: 1, step: 0.25 }] })).toHaveLength(3);
  });

  it('cuts the window into rolling folds whose out-of-sample parts tile its end', () => {
    const folds = foldsOf(1000, 4, 75);
    // oos = floor(1000 × 0.25 / (0.75 + 4 × 0.25)) = 142; is = 1000 − 4 × 142 = 432.
    expect(folds).toEqual([
      { inSample: [0, 432], outOfSample: [432, 574] },
      { inSample: [142, 574], outOfSample: [574, 716] },
      { inSample: [284, 716], outOfSample: [716, 858] },
      { inSample: [426, 858], outOfSample: [858, 1000] },
    ]);
    expect(() => foldsOf(20, 10, 90)).toThrow(/folds too short/);
  });

  it('sets values into the rules and checks them as a published version is checked', () => {
    const set = rulesWith(rules, { 'indicators.fast.period': 5, stopLossPercent: 1.5, 'sizing.exposure': 2 });
    expect(set).toMatchObject({ indicators: { fast: { type: 'ema', period: 5 }, slow: { period: 8 } }, stopLossPercent: 1.5, sizing: { exposure: 2 } });
    expect(rules.indicators.fast).toEqual({ type: 'ema', period: 3 }); // the version's own rules are untouched
    expect(rulesWith(rules, { 'indicators.fast.period': 1 })).toMatch(/indicators\.fast\.period: .*2/);
    expect(() => checkPaths(rules, [{ path: 'indicators.fast.type', min: 1, max: 2, step: 1 }])).toThrow('indicators.fast.type names no number in the rules');
    expect(() => checkPaths(rules, [{ path: 'indicators.medium.period', min: 1, max: 2, step: 1 }])).toThrow('names no number');
    expect(() => checkPaths(rules, [{ path: 'stopLossPercent', min: 1, max: 2, step: 1 }, { path: 'stopLossPercent', min: 1, max: 2, step: 1 }])).toThrow('named twice');
    expect(() => checkPaths(rules, [{ path: 'entry.long.0.right', min: 1, max: 2, step: 1 }])).toThrow('names no number'); // `slow`, a name
  });
});
