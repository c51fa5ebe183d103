import { describe, expect, it } from 'vitest';
import { SecretHasher } from './secrets.js';

const hasher = new SecretHasher('p'.repeat(32));

describe('SecretHasher.issueTokens', () => {
  it('issues distinct 32-byte tokens from one draw, each with its keyed hash', () => {
    const tokens = hasher.issueTokens(100);
    expect(new Set(tokens.map((t) => t.token)).size).toBe(100);
    for (const { token, hash } of tokens) {
      expect(Buffer.from(token, 'base64url')).toHaveLength(32);
      expect(hash).toBe(hasher.hash(token));
      expect(hasher.matches(token, hash)).toBe(true);
    }
    expect(hasher.issueTokens(0)).toEqual([]);
  });
});
