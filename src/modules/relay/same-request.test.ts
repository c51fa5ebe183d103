import { PaymentRequest } from 'mppx';
import { describe, expect, it } from 'vitest';
import { normalizedRequest } from './credential.js';
import { sameRequest } from './same-request.js';

/** The comparison sameRequest replaced: both requests as RFC 8785 canonical JSON, address fields lowercased. */
function canonical(request: unknown): string {
  return PaymentRequest.serialize({ request: normalizedRequest(request) });
}
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The old answer: same, different, or thrown (the old code threw TypeError on a non-finite number). */
function oldAnswer(a: unknown, b: unknown): boolean | 'throws' {
  try {
    return canonical(a) === canonical(b);
  } catch {
    return 'throws';
  }
}
function newAnswer(a: unknown, b: unknown): boolean | 'throws' {
  try {
    return sameRequest(a, b);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return 'throws';
  }
}

const CURRENCY = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const RECIPIENT = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const PERMIT2 = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
const base = { amount: '10000', currency: CURRENCY, methodDetails: { chainId: 4663, credentialTypes: ['authorization'], decimals: 6 }, recipient: RECIPIENT };
const md = base.methodDetails;
const split = (recipient: string, amount = '100') => ({ amount, recipient });

/** Requests that are, or are not, the same as base (and as each other) in every way the spec cares about. */
const variants: unknown[] = [
  base,
  { recipient: RECIPIENT.toLowerCase(), methodDetails: { decimals: 6, credentialTypes: ['authorization'], chainId: 4663 }, currency: CURRENCY.toUpperCase().replace('0X', '0x'), amount: '10000' },
  { ...base, description: undefined }, // an undefined member is no member
  { ...base, amount: '10001' },
  { ...base, amount: 10000 },
  { ...base, currency: CURRENCY.slice(0, -1) },
  { ...base, currency: 42 },
  { ...base, recipient: CURRENCY },
  { ...base, recipient: null },
  { ...base, description: 'x' },
  { ...base, description: 'X' }, // other strings compare exactly
  { ...base, externalId: RECIPIENT },
  { ...base, externalId: RECIPIENT.toLowerCase() }, // an address-looking value elsewhere is not an address field
  { amount: '10000', currency: CURRENCY, recipient: RECIPIENT },
  { ...base, methodDetails: { ...md, chainId: 1 } },
  { ...base, methodDetails: { ...md, chainId: -0 } },
  { ...base, methodDetails: { ...md, chainId: 0 } }, // -0 and 0 are one number
  { ...base, methodDetails: { ...md, credentialTypes: [] } },
  { ...base, methodDetails: { ...md, credentialTypes: { 0: 'authorization' } } }, // an object is not an array
  { ...base, methodDetails: { ...md, credentialTypes: ['authorization', 'authorization'] } },
  { ...base, methodDetails: { ...md, permit2Address: PERMIT2 } },
  { ...base, methodDetails: { ...md, permit2Address: PERMIT2.toLowerCase() } },
  { ...base, methodDetails: { ...md, permit2Address: PERMIT2.toUpperCase().replace('0X', '0x') } },
  { ...base, methodDetails: { ...md, splits: [split(RECIPIENT), split(PERMIT2)] } },
  { ...base, methodDetails: { ...md, splits: [split(RECIPIENT.toLowerCase()), split(PERMIT2.toUpperCase().replace('0X', '0x'))] } },
  { ...base, methodDetails: { ...md, splits: [split(PERMIT2), split(RECIPIENT)] } }, // order matters
  { ...base, methodDetails: { ...md, splits: [split(RECIPIENT), split(PERMIT2, '101')] } },
  { ...base, methodDetails: { ...md, splits: [split(RECIPIENT)] } },
  { ...base, methodDetails: { ...md, splits: ['x', split(RECIPIENT)] } },
  { ...base, methodDetails: { ...md, splits: { recipient: RECIPIENT } } },
  { ...base, methodDetails: { ...md, nested: { recipient: RECIPIENT } } },
  { ...base, methodDetails: { ...md, nested: { recipient: RECIPIENT.toLowerCase() } } }, // only the known places
  { ...base, methodDetails: 'details' },
  { ...base, methodDetails: ['details'] },
  { ...base, methodDetails: null },
  { ...base, extra: { a: [1, { b: [true, null, 'c'] }] } },
  { ...base, extra: { a: [1, { b: [true, null, 'c'], c: undefined }] } },
  { ...base, extra: { a: [1, { b: [true, 'c', null] }] } },
  { ...base, extra: { a: [1.5e300, { b: [] }] } },
  { ...base, extra: { a: [1.5e300, { b: {} }] } },
  { ...base, extra: Infinity },
  { ...base, methodDetails: { ...md, chainId: Number.NaN } },
  [],
  [base],
  null,
  'request',
  0,
];

describe('sameRequest: what the canonical comparison answered', () => {
  it('for every pair of variants (and each with itself)', () => {
    let same = 0;
    for (const a of variants) {
      for (const b of variants) {
        const before = oldAnswer(a, b);
        const after = newAnswer(a, b);
        if (before === 'throws') expect(after, JSON.stringify([a, b])).not.toBe(true); // still refused
        else expect(after, JSON.stringify([a, b])).toBe(before);
        if (after === true && a !== b) same += 1;
      }
    }
    expect(same).toBeGreaterThan(10); // the variants do test sameness, not only difference
  });

  it('for random JSON trees, their reorderings and address recasings', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
    const leaf = () => pick<unknown>([0, 1, -1, 2.5, '', 'a', 'A', RECIPIENT, RECIPIENT.toLowerCase(), true, false, null]);
    const tree = (depth: number): unknown => {
      if (depth === 0 || random() < 0.3) return leaf();
      if (random() < 0.4) return Array.from({ length: Math.floor(random() * 3) }, () => tree(depth - 1));
      const keys = ['currency', 'recipient', 'methodDetails', 'splits', 'permit2Address', 'amount', 'x'];
      return Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick(keys), tree(depth - 1)]));
    };
    const reshuffle = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reshuffle);
      if (!isObject(value)) return typeof value === 'string' && random() < 0.5 ? (random() < 0.5 ? value.toLowerCase() : value.toUpperCase()) : value;
      return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reshuffle(v)]));
    };
    let same = 0;
    for (let i = 0; i < 3000; i++) {
      const a = tree(4);
      const b = random() < 0.5 ? reshuffle(a) : tree(4);
      const after = newAnswer(a, b);
      expect(after, JSON.stringify([a, b])).toBe(oldAnswer(a, b));
      if (after === true) same += 1;
    }
    expect(same).toBeGreaterThan(300);
  });
});
