import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretHasher } from './secrets.js';

const OLD = 'o'.repeat(32);
const NEW = 'n'.repeat(32);
const hasher = new SecretHasher('p'.repeat(32));

describe('SecretHasher.issueToken', () => {
  it('issues distinct 32-byte tokens, each with its keyed hash under the current pepper', () => {
    const tokens = Array.from({ length: 100 }, () => hasher.issueToken());
    expect(new Set(tokens.map((t) => t.token)).size).toBe(100);
    for (const { token, hash } of tokens) {
      expect(Buffer.from(token.split('.')[0]!, 'base64url')).toHaveLength(32);
      expect(token.split('.')[1]).toBe(hasher.pepperId);
      expect(hash).toBe(hasher.hash(token));
      expect(hasher.matches(token, hash)).toBe(true);
    }
  });
});

describe('SecretHasher across a pepper rotation', () => {
  const before = new SecretHasher(OLD);
  const during = new SecretHasher(NEW, OLD);
  const after = new SecretHasher(NEW);

  it('writes under the current pepper and finds under either while the previous is accepted', () => {
    const issued = before.issue('api');
    expect(issued.hash).toMatch(new RegExp(`^p1\\.${before.pepperId}\\.[0-9a-f]{64}$`));
    expect(during.candidates(issued.secret)).toContain(issued.hash);
    expect(during.matches(issued.secret, issued.hash)).toBe(true);
    expect(during.stateOf(issued.hash)).toBe('previous');
    expect(after.matches(issued.secret, issued.hash)).toBe(false);
  });

  it('lists the current form first: the stored form hash() writes (what a lookup tries alone before the others)', () => {
    for (const secret of [before.issue('api').secret, during.issueToken().token, before.issueToken().token]) {
      expect(during.candidates(secret)[0]).toBe(during.hash(secret));
    }
  });

  it('re-keys a previous-pepper hash without the secret, to what the new pepper would have written', () => {
    const issued = before.issue('wallet');
    const rekeyed = during.rekey(issued.hash)!;
    expect(rekeyed).toBe(after.hash(issued.secret));
    expect(during.stateOf(rekeyed)).toBe('current');
    expect(after.matches(issued.secret, rekeyed)).toBe(true);
    // Nothing to do for a current hash; nothing possible for a legacy HMAC or another pepper's hash.
    expect(during.rekey(rekeyed)).toBeNull();
    expect(during.rekey(createHmac('sha256', OLD).update(issued.secret).digest('hex'))).toBeNull();
    expect(new SecretHasher(NEW, 'x'.repeat(32)).stateOf(issued.hash)).toBe('unknown');
  });

  it('finds a legacy HMAC (stored before this format) under the current or the previous pepper', () => {
    const secret = 'svc_api_legacylegacylegacylegacylegacylegacylegacy';
    const legacy = createHmac('sha256', OLD).update(secret).digest('hex');
    expect(during.stateOf(legacy)).toBe('legacy');
    expect(during.matches(secret, legacy)).toBe(true);
    expect(before.matches(secret, legacy)).toBe(true);
    expect(after.matches(secret, legacy)).toBe(false);
  });

  it('hashes an issued token under the pepper it names: a lease taken before the switch is acked after it', () => {
    const { token, hash } = before.issueToken();
    expect(during.hash(token)).toBe(hash);
    // A token from before tags existed (43 characters): the current pepper's HMAC, as it always was.
    const untagged = token.split('.')[0]!;
    expect(before.hash(untagged)).toBe(createHmac('sha256', OLD).update(untagged).digest('hex'));
  });

  it('payment identifiers: the current pepper names them, the previous one is still a candidate', () => {
    expect(during.keyed('x402-settle:r')).toBe(after.keyed('x402-settle:r'));
    expect(during.keyedCandidates('x402-settle:r')).toEqual([after.keyed('x402-settle:r'), before.keyed('x402-settle:r')]);
  });
});
