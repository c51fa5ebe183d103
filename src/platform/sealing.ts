import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * AES-256-GCM sealing of secrets at rest (wallet keys, agents' model-provider keys) under the master key.
 * The owner (e.g. the wallet id) is bound as associated data, so a sealed value copied onto another row
 * does not open. The master key's id is kept in the blob, so a wrong master key fails with a clear
 * message instead of a bare auth error.
 */
export class KeySealer {
  readonly keyId: string;
  /** During a rotation (WALLET_MASTER_KEY_PREVIOUS): the key that still opens what it sealed, never seals. */
  readonly previousKeyId: string | null;
  readonly #previous: Buffer | null;

  constructor(
    private readonly masterKey: Buffer,
    previous: Buffer | null = null,
  ) {
    if (masterKey.length !== 32 || (previous && previous.length !== 32)) throw new Error('the wallet master key must be 32 bytes');
    this.keyId = keyIdOf(masterKey);
    this.#previous = previous;
    this.previousKeyId = previous ? keyIdOf(previous) : null;
  }

  seal(plaintext: Buffer, associatedData: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.masterKey, iv);
    cipher.setAAD(Buffer.from(associatedData));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    return [VERSION, this.keyId, iv, cipher.getAuthTag(), ciphertext].map((part) => (Buffer.isBuffer(part) ? part.toString('base64url') : part)).join('.');
  }

  open(sealed: string, associatedData: string): Buffer {
    const [version, keyId, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !ciphertext) throw new Error('unrecognised sealed key format');
    const key = keyId === this.keyId ? this.masterKey : keyId === this.previousKeyId ? this.#previous : null;
    if (!key) throw new Error(`key was sealed under another master key (${keyId})`);
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(associatedData));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  }

  /** Which master key sealed a value: the current one, the previous one, or another (it does not open here). */
  stateOf(sealed: string): 'current' | 'previous' | 'unknown' {
    const [version, keyId] = sealed.split('.');
    if (version !== VERSION) return 'unknown';
    return keyId === this.keyId ? 'current' : keyId === this.previousKeyId ? 'previous' : 'unknown';
  }

  /** The value sealed again under the current key when the previous one sealed it; null when there is nothing to do. */
  reseal(sealed: string, associatedData: string): string | null {
    if (this.stateOf(sealed) !== 'previous') return null;
    return this.seal(this.open(sealed, associatedData), associatedData);
  }
}

const keyIdOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);
