import { describe, expect, it } from 'vitest';
import { dec, feeUsd, sizeText, text, toLots, toTick } from './money.js';

describe('exact money', () => {
  it('rounds a size down to whole lots, never up, whatever its sign', () => {
    expect(text(toLots('0.123456789', '0.00001'))).toBe('0.12345');
    expect(text(toLots(-0.999999, '0.001'))).toBe('0.999');
    expect(text(toLots('0.0000099', '0.00001'))).toBe('0');
    expect(text(toLots('25', '10'))).toBe('20');
  });

  it('puts a price on the tick grid in the direction asked', () => {
    expect(text(toTick('100.031', '0.05', 'up'))).toBe('100.05');
    expect(text(toTick('100.031', '0.05', 'down'))).toBe('100');
    expect(text(toTick('100.05', '0.05', 'up'))).toBe('100.05');
  });

  it('writes a size with its lot decimals, and plain text for any amount (never exponents)', () => {
    expect(sizeText(dec('1'), '0.000001')).toBe('1.000000');
    expect(sizeText(dec('3'), '1')).toBe('3');
    expect(text(dec('0.00000001'))).toBe('0.00000001');
    expect(text(dec(1e21))).toBe('1000000000000000000000');
  });

  it('rounds a fee up to the cent: never away', () => {
    expect(text(feeUsd(dec('1000.5'), 7.5))).toBe('0.76'); // 0.750375
    expect(text(feeUsd(dec('50'), 10))).toBe('0.05');
    expect(text(feeUsd(dec('40'), 10))).toBe('0.04');
    expect(text(feeUsd(dec('1'), 10))).toBe('0.01'); // 0.001: a dollar's order still pays a cent
    expect(text(feeUsd(dec('0'), 10))).toBe('0');
  });
});
