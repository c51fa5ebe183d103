import { describe, expect, it } from 'vitest';
import { DEFAULT_PARAMS, SignalParamsError, signalOf, signalParams } from './quant-signal.js';

const candles = (closes: number[]) => closes.map((close, i) => ({ start: String(i), open: close, high: close, low: close, close }));

describe('quant_signal parameters', () => {
  it('reads key=value tokens from the instructions and keeps the defaults otherwise', () => {
    expect(signalParams('Buy momentum.')).toEqual(DEFAULT_PARAMS);
    expect(signalParams('Trend: fast=3, slow=12; exposure=0.5 short=true')).toEqual({ fast: 3, slow: 12, exposure: 0.5, short: true });
  });

  it('refuses parameters out of range', () => {
    for (const text of ['fast=0', 'slow=201', 'fast=8 slow=8', 'exposure=11', 'exposure=-1', 'short=yes', 'fast=2.5']) {
      expect(() => signalParams(text), text).toThrow(SignalParamsError);
    }
  });
});

describe('the moving-average cross', () => {
  const params = { fast: 2, slow: 4, exposure: 1, short: false };
  it('is long when the fast average is above the slow one, flat (or short when allowed) below', () => {
    expect(signalOf('X', candles([1, 2, 3, 4]), 4, params)).toMatchObject({ signal: 'long', fastSma: 3.5, slowSma: 2.5 });
    expect(signalOf('X', candles([4, 3, 2, 1]), 1, params).signal).toBe('flat');
    expect(signalOf('X', candles([4, 3, 2, 1]), 1, { ...params, short: true }).signal).toBe('short');
    expect(signalOf('X', candles([2, 2, 2, 2]), 2, { ...params, short: true }).signal).toBe('flat');
  });
});
