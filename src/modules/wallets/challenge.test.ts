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

  it('refuses when any one requirement exceeds maxPayment or names another network or asset (the spec: all must match)', () => {
    expect(() => chooseRequirement(pr(req('10'), req('101')), max('100'))).toThrow(expect.objectContaining({ status: 400, code: 'payment_requirements_rejected' }));
    expect(() => chooseRequirement(pr(req('10'), req('10', { network: 'eip155:1' })), max('100'))).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => chooseRequirement(pr(req('10'), req('10', { asset: `0x${'2'.repeat(40)}` })), max('100'))).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('skips offers it cannot sign when every offer matches maxPayment, and refuses when none is left', () => {
    const permit2 = req('5', { extra: { name: 'Global Dollar', version: '1', assetTransferMethod: 'permit2' } });
    expect(chooseRequirement(pr(permit2, req('50')), max('100')).amount).toBe('50');
    expect(() => chooseRequirement(pr(permit2, req('50', { maxTimeoutSeconds: 86_400 })), max('100'))).toThrow(expect.objectContaining({ status: 400 }));
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

// A well-formed challenge but for one `extra` value nested 1,000 levels: only the JSON guard refuses it.
const deepChallenge = JSON.stringify(pr(req('1'))).replace('"version":"1"', `"version":"1","deep":${'['.repeat(1000)}${']'.repeat(1000)}`);

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
    ['a header nested 1,000 levels', response({ 'payment-required': Buffer.from(deepChallenge).toString('base64') })],
    ['a body nested 1,000 levels', response({}, deepChallenge)],
    ['U+0000 in the body', response({}, JSON.stringify(pr(req('1', { payTo: 'a\u0000b' }))))],
    ['a lone surrogate in the header', response({ 'payment-required': Buffer.from(JSON.stringify(pr(req('1'))).replace('exact', 'exact\\ud800')).toString('base64') })],
  ])('answers 502 for %s', (_label, r) => {
    expect(() => parseChallenge(r)).toThrow(expect.objectContaining({ status: 502, code: 'invalid_challenge' }));
  });
});
