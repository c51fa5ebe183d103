import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { encodePaymentRequiredHeader } from '@x402/core/http';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../platform/http/errors.js';
import { chooseRequirement, parseChallenge } from './challenge.js';

const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const req = (amount: string, extra: Partial<PaymentRequirements> = {}): PaymentRequirements => ({
  scheme: 'exact', network: 'eip155:4663', asset: USDG, amount, payTo: `0x${'7'.repeat(40)}`, maxTimeoutSeconds: 60, extra: { name: 'Global Dollar', version: '1' }, ...extra,
});
const pr = (...accepts: PaymentRequirements[]): PaymentRequired => ({ x402Version: 2, resource: { url: 'https://x' }, accepts });
const max = (amount: string) => ({ network: 'eip155:4663', asset: USDG.toLowerCase(), amount });
const response = (headers: Record<string, string>, body = '') => ({ status: 402, headers, body: Buffer.from(body), url: 'https://x' });

describe('chooseRequirement', () => {
  it('accepts an amount equal to the maximum, comparing assets case-insensitively', () => {
    expect(chooseRequirement(pr(req('100')), max('100')).amount).toBe('100');
  });

  it('picks the cheapest payable offer, the first on a tie', () => {
    const a = req('50', { payTo: `0x${'a'.repeat(40)}` });
    const b = req('50', { payTo: `0x${'b'.repeat(40)}` });
    expect(chooseRequirement(pr(req('90'), a, b), max('100'))).toBe(a);
  });

  it('compares amounts as integers, not strings', () => {
    expect(() => chooseRequirement(pr(req('1000')), max('999'))).toThrow(ApiError);
    expect(chooseRequirement(pr(req('99')), max('100')).amount).toBe('99');
  });

  it('refuses with 400 and the offers', () => {
    try {
      chooseRequirement(pr(req('101')), max('100'));
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ status: 400, code: 'payment_requirements_rejected', details: { accepts: [req('101')] } });
    }
  });
});

describe('parseChallenge', () => {
  it('reads the PAYMENT-REQUIRED header', () => {
    expect(parseChallenge(response({ 'payment-required': encodePaymentRequiredHeader(pr(req('1'))) })).accepts).toHaveLength(1);
  });

  it('falls back to a JSON body', () => {
    expect(parseChallenge(response({}, JSON.stringify(pr(req('1'))))).x402Version).toBe(2);
  });

  it.each([
    ['no challenge', response({}, 'pay')],
    ['version 1', response({}, JSON.stringify({ ...pr(req('1')), x402Version: 1 }))],
    ['a non-integer amount', response({}, JSON.stringify(pr(req('1.5'))))],
    ['no accepts', response({}, JSON.stringify(pr()))],
  ])('answers 502 for %s', (_label, r) => {
    expect(() => parseChallenge(r)).toThrow(expect.objectContaining({ status: 502, code: 'invalid_challenge' }));
  });
});
