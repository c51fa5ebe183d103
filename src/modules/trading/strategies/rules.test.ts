import { describe, expect, it } from 'vitest';
import type { Candle } from '../data/market-data.js';
import { candlesNeeded, evaluateRules, quantRules } from './rules.js';

const candles = (closes: number[]): Candle[] => closes.map((close, i) => ({ start: new Date(i * 60_000).toISOString(), open: close, high: close + 1, low: close - 1, close }));

const rules = quantRules.parse({
  indicators: { fast: { type: 'sma', period: 2 }, slow: { type: 'sma', period: 4 }, rsi: { type: 'rsi', period: 3 }, bands: { type: 'bollinger', period: 4 }, macd: { type: 'macd', fast: 2, slow: 4, signal: 2 } },
  entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
  exit: { long: [{ left: 'rsi', op: '>', right: 70 }], short: [{ left: 'price', op: '<', right: 'bands.lower' }] },
  stopLossPercent: 2,
});

describe('quant_signal rules', () => {
  it('enter on a cross of the last closed candle only, close on an exit condition, keep otherwise', () => {
    // fast (SMA 2) crosses above slow (SMA 4) on the last candle: 10,10,10,10 then 9 then 13.
    const crossUp = candles([10, 10, 10, 10, 9, 13]);
    expect(evaluateRules(rules, crossUp, 13, 'flat')).toMatchObject({ target: 'long', because: ['fast crosses_above slow'] });
    // Already above before the last candle: no cross, no entry.
    expect(evaluateRules(rules, candles([10, 10, 10, 10, 13, 14]), 14, 'flat').target).toBe('keep');
    expect(evaluateRules(rules, candles([10, 10, 10, 10, 11, 7]), 7, 'flat')).toMatchObject({ target: 'short' });
    // RSI far above 70 after a run up: the long closes; the same candles keep a short.
    const runUp = candles([10, 11, 12, 13, 14, 15, 16]);
    expect(evaluateRules(rules, runUp, 16, 'long')).toMatchObject({ target: 'flat', because: ['rsi > 70'] });
    expect(evaluateRules(rules, runUp, 16, 'short').target).toBe('keep');
    const verdict = evaluateRules(rules, runUp, 16, 'long');
    expect(verdict.values.fast).toBe(15.5);
    expect(verdict.values.bands).toMatchObject({ middle: 14.5 });
    expect(Object.keys(verdict.values.macd as object).sort()).toEqual(['histogram', 'macd', 'signal']);
  });

  it('an indicator still warming up holds no condition', () => {
    expect(evaluateRules(rules, candles([10, 12]), 12, 'flat')).toMatchObject({ target: 'keep', values: { slow: null } });
    expect(candlesNeeded(rules)).toBeGreaterThanOrEqual(5);
  });

  it('refuses conditions over unknown indicators or fields, with the reason', () => {
    const bad = (over: object) => quantRules.safeParse({ indicators: { fast: { type: 'sma', period: 5 }, macd: { type: 'macd', fast: 3, slow: 6, signal: 2 } }, entry: { long: [over] } });
    expect(bad({ left: 'fast', op: '>', right: 'slow' }).error?.issues[0]?.message).toBe('slow: no indicator named slow');
    expect(bad({ left: 'macd', op: '>', right: 0 }).error?.issues[0]?.message).toMatch(/name one of the macd's fields/);
    expect(bad({ left: 'fast.upper', op: '>', right: 0 }).error?.issues[0]?.message).toMatch(/a sma has no fields/);
    expect(bad({ left: 'macd.histogram', op: 'crosses_above', right: 0 }).success).toBe(true);
  });
});
