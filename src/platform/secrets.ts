import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIXES = { api: 'svc_api_', wallet: 'svc_wallet_' } as const;
export type SecretFamily = keyof typeof SECRET_PREFIXES;

/** How many characters of the random part stay visible in `prefix`, for telling keys apart. */
const VISIBLE_CHARS = 8;

export interface IssuedSecret {
  /** The whole secret: shown to the caller once, never stored. */
  secret: string;
  /** Display prefix, stored and returned on later reads. */
  prefix: string;
  /** Keyed hash, stored and looked up. */
  hash: string;
}

/**
 * Secrets are hashed with HMAC-SHA256 under a server pepper: a leaked table alone cannot be used
 * to verify guesses, and 32 random bytes make offline guessing hopeless anyway.
 */
export class SecretHasher {
  constructor(private readonly pepper: string) {
    if (pepper.length < 32) throw new Error('secret pepper must be at least 32 characters');
  }

  hash(secret: string): string {
    return createHmac('sha256', this.pepper).update(secret).digest('hex');
  }

  issue(family: SecretFamily): IssuedSecret {
    const random = randomBytes(32).toString('base64url');
    const secret = `${SECRET_PREFIXES[family]}${random}`;
    return { secret, prefix: `${SECRET_PREFIXES[family]}${random.slice(0, VISIBLE_CHARS)}`, hash: this.hash(secret) };
  }

  /** Lease tokens and other one-off secrets without a public prefix. */
  issueToken(): { token: string; hash: string } {
    const token = randomBytes(32).toString('base64url');
    return { token, hash: this.hash(token) };
  }

  /** `count` lease tokens from one draw of randomness (a batch claim issues up to 100 at once). */
  issueTokens(count: number): { token: string; hash: string }[] {
    const random = randomBytes(32 * count);
    return Array.from({ length: count }, (_, i) => {
      const token = random.subarray(32 * i, 32 * (i + 1)).toString('base64url');
      return { token, hash: this.hash(token) };
    });
  }

  matches(secret: string, storedHash: string): boolean {
    const a = Buffer.from(this.hash(secret), 'hex');
    const b = Buffer.from(storedHash, 'hex');
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
