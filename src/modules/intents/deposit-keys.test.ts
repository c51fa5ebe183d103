import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeySealer } from '../../platform/sealing.js';
import { DepositKeys, deriveKey } from './deposit-keys.js';

describe('deposit keys', () => {
  const keys = new DepositKeys(new KeySealer(randomBytes(32)));

  it('derive one address per intent, the same every time, from the project seed', () => {
    const sealed = keys.seal(randomBytes(32), 'project-a');
    const first = keys.account(sealed, 'project-a', '01900000-0000-7000-8000-000000000001');
    expect(keys.account(sealed, 'project-a', '01900000-0000-7000-8000-000000000001').address).toBe(first.address);
    const others = Array.from({ length: 50 }, (_, i) => keys.account(sealed, 'project-a', `01900000-0000-7000-8000-${String(i + 2).padStart(12, '0')}`).address);
    expect(new Set([first.address, ...others]).size).toBe(51);
  });

  it('a sealed seed opens only for its own project, and never shows the seed', () => {
    const seed = randomBytes(32);
    const sealed = keys.seal(seed, 'project-a');
    expect(sealed).not.toContain(seed.toString('hex'));
    expect(sealed).not.toContain(seed.toString('base64url'));
    expect(() => keys.account(sealed, 'project-b', '01900000-0000-7000-8000-000000000001')).toThrow();
  });

  it('a key is a valid secp256k1 scalar, and another seed gives another key', () => {
    const a = deriveKey(Buffer.alloc(32, 1), 'intent');
    expect(a).toMatch(/^0x[0-9a-f]{64}$/);
    expect(deriveKey(Buffer.alloc(32, 1), 'intent')).toBe(a);
    expect(deriveKey(Buffer.alloc(32, 2), 'intent')).not.toBe(a);
  });
});
