import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_PREFIXES = {
  api: 'svc_api_',
  wallet: 'svc_wallet_',
  /** OAuth (src/modules/oauth): access tokens for /mcp, refresh tokens, and client secrets of registered clients. */
  oauthAccess: 'svc_oauth_at_',
  oauthRefresh: 'svc_oauth_rt_',
  oauthClient: 'svc_oauth_cs_',
} as const;
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

/** A stored secret hash: `p1.<pepper id>.<64 hex>` (see SecretHasher). */
const STORED = /^p1\.([0-9a-f]{16})\.([0-9a-f]{64})$/;
/** What releases before the rotation stored: HMAC-SHA256 under the pepper, hex. */
const LEGACY = /^[0-9a-f]{64}$/;
/** A token this service issued (lease tokens, OAuth codes): 32 random bytes, then the id of the pepper that hashed it. */
const TOKEN = /^[A-Za-z0-9_-]{43}(?:\.([0-9a-f]{16}))?$/;

/** Where a stored hash stands in a rotation (SecretHasher.stateOf). */
export type HashState = 'current' | 'previous' | 'legacy' | 'unknown';

class Pepper {
  readonly id: string;
  readonly #pepper: string;
  readonly #key: Buffer;

  constructor(pepper: string) {
    if (pepper.length < 32) throw new Error('secret pepper must be at least 32 characters');
    this.#pepper = pepper;
    this.id = createHmac('sha256', pepper).update('tollgate pepper id').digest('hex').slice(0, 16);
    this.#key = createHmac('sha256', pepper).update('tollgate secret-hash key v1').digest();
  }

  hmac(value: string): string {
    return createHmac('sha256', this.#pepper).update(value).digest('hex');
  }

  /** AES-256 over the 32-byte digest, no padding: deterministic (lookups by equality) and reversible (re-keying). */
  seal(digest: Buffer): string {
    const cipher = createCipheriv('aes-256-ecb', this.#key, null).setAutoPadding(false);
    return `p1.${this.id}.${Buffer.concat([cipher.update(digest), cipher.final()]).toString('hex')}`;
  }

  open(hex: string): Buffer {
    const decipher = createDecipheriv('aes-256-ecb', this.#key, null).setAutoPadding(false);
    return Buffer.concat([decipher.update(Buffer.from(hex, 'hex')), decipher.final()]);
  }
}

/**
 * Secrets are stored as a keyed hash under a server pepper: a leaked table alone cannot be used to verify
 * guesses, and 32 random bytes make offline guessing hopeless anyway.
 *
 * The keyed hash is AES-256, under a key derived from the pepper, of the secret's SHA-256: `p1.<pepper id>.<hex>`.
 * Keyed like the HMAC-SHA256 it replaces, and deterministic so a lookup is one indexed equality; but reversible
 * with the pepper, which is what a rotation needs: the old pepper's hash of a credential can be turned into the
 * new pepper's without the credential (an HMAC cannot: it would take every secret presented once). The digest is
 * uniformly random, so encrypting its two blocks independently (ECB) shows no pattern.
 *
 * During a rotation (SECRET_PEPPER_PREVIOUS, docs/operations.md#key-rotation) hashes are written under the current
 * pepper and found under either; `tollgate keys rotate-pepper` re-keys the rows left under the previous one.
 * Hashes stored before this format (bare hex HMACs) are still found, and are rewritten when their secret is next
 * presented (Authenticator).
 *
 * Tokens the service issues and takes back within minutes or hours (event leases, OAuth codes) carry the id of the
 * pepper that hashed them, and are always hashed under it: a lease taken before a rotation is still acked after.
 */
export class SecretHasher {
  readonly #current: Pepper;
  readonly #previous: Pepper | null;

  constructor(pepper: string, previous: string | null = null) {
    this.#current = new Pepper(pepper);
    this.#previous = previous ? new Pepper(previous) : null;
  }

  /** The id stored hashes name the current pepper by (`p1.<id>.…`): not secret. */
  get pepperId(): string {
    return this.#current.id;
  }

  get previousPepperId(): string | null {
    return this.#previous?.id ?? null;
  }

  #pepper(id: string | undefined): Pepper | null {
    if (id === undefined || id === this.#current.id) return this.#current;
    return id === this.#previous?.id ? this.#previous : null;
  }

  /** The stored form of a secret (what is written, and what a lookup under the current pepper finds). */
  hash(secret: string): string {
    const token = TOKEN.exec(secret);
    if (token) return (this.#pepper(token[1]) ?? this.#current).hmac(secret);
    return this.#current.seal(digest(secret));
  }

  /**
   * Every stored form that may hold this secret, the current first: the current and previous pepper's, and the
   * legacy HMACs under each. A lookup tries them in order.
   */
  candidates(secret: string): string[] {
    if (TOKEN.test(secret)) return [this.hash(secret)];
    const peppers = this.#previous ? [this.#current, this.#previous] : [this.#current];
    const sha = digest(secret);
    return [...peppers.map((p) => p.seal(sha)), ...peppers.map((p) => p.hmac(secret))];
  }

  issue(family: SecretFamily): IssuedSecret {
    const random = randomBytes(32).toString('base64url');
    const secret = `${SECRET_PREFIXES[family]}${random}`;
    return { secret, prefix: `${SECRET_PREFIXES[family]}${random.slice(0, VISIBLE_CHARS)}`, hash: this.hash(secret) };
  }

  /** Lease tokens and other one-off secrets without a public prefix. */
  issueToken(): { token: string; hash: string } {
    const token = `${randomBytes(32).toString('base64url')}.${this.#current.id}`;
    return { token, hash: this.#current.hmac(token) };
  }

  /** Whether the secret is the one behind a stored hash, under any accepted pepper (constant-time compares). */
  matches(secret: string, storedHash: string): boolean {
    const stored = Buffer.from(storedHash);
    let found = false;
    for (const candidate of this.candidates(secret)) {
      const c = Buffer.from(candidate);
      if (c.length === stored.length && timingSafeEqual(c, stored)) found = true;
    }
    return found;
  }

  /**
   * A keyed hash that names something rather than stores a secret (x402 payment identifiers): HMAC-SHA256 hex
   * under the current pepper. keyedCandidates adds the previous pepper's, for what was named before a rotation.
   */
  keyed(value: string): string {
    return this.#current.hmac(value);
  }

  keyedCandidates(value: string): string[] {
    return this.#previous ? [this.#current.hmac(value), this.#previous.hmac(value)] : [this.#current.hmac(value)];
  }

  stateOf(storedHash: string): HashState {
    const stored = STORED.exec(storedHash);
    if (stored) return stored[1] === this.#current.id ? 'current' : stored[1] === this.#previous?.id ? 'previous' : 'unknown';
    return LEGACY.test(storedHash) ? 'legacy' : 'unknown';
  }

  /** The current pepper's form of a hash stored under the previous one; null for any other (nothing to do, or cannot). */
  rekey(storedHash: string): string | null {
    const stored = STORED.exec(storedHash);
    if (!stored || !this.#previous || stored[1] !== this.#previous.id) return null;
    return this.#current.seal(this.#previous.open(stored[2]!));
  }
}

/** SHA-256 of the secret: unkeyed, the pepper's key is applied on top of it. */
const digest = (secret: string): Buffer => createHash('sha256').update(secret).digest();
