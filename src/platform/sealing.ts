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

  constructor(private readonly masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the wallet master key must be 32 bytes');
    this.keyId = createHash('sha256').update(masterKey).digest('hex').slice(0, 16);
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
    if (keyId !== this.keyId) throw new Error(`key was sealed under another master key (${keyId})`);
    const decipher = createDecipheriv('aes-256-gcm', this.masterKey, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(associatedData));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
  }
}
