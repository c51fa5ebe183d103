import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { privateKeyToAccount } from 'viem/accounts';
import { LocalKeystoreProvider } from './keystore.js';
import { KeySealer } from '../../platform/sealing.js';

describe('KeySealer', () => {
  const sealer = new KeySealer(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const secret = randomBytes(32);
    const sealed = sealer.seal(secret, 'wallet-1');
    expect(sealed).not.toContain(secret.toString('hex'));
    expect(sealed).not.toContain(secret.toString('base64url'));
    expect(sealer.open(sealed, 'wallet-1')).toEqual(secret);
  });

  it('uses a fresh IV each time', () => {
    const secret = randomBytes(32);
    expect(sealer.seal(secret, 'w')).not.toBe(sealer.seal(secret, 'w'));
  });

  it('refuses another wallet id (bound as associated data)', () => {
    const sealed = sealer.seal(randomBytes(32), 'wallet-1');
    expect(() => sealer.open(sealed, 'wallet-2')).toThrow();
  });

  it('refuses a tampered ciphertext', () => {
    const parts = sealer.seal(randomBytes(32), 'w').split('.');
    const ct = Buffer.from(parts[4], 'base64url');
    ct[0] ^= 1;
    parts[4] = ct.toString('base64url');
    expect(() => sealer.open(parts.join('.'), 'w')).toThrow();
  });

  it('names a wrong master key', () => {
    const sealed = sealer.seal(randomBytes(32), 'w');
    expect(() => new KeySealer(randomBytes(32)).open(sealed, 'w')).toThrow(/another master key/);
  });

  it('wants a 32-byte master key', () => {
    expect(() => new KeySealer(randomBytes(16))).toThrow();
  });
});

describe('LocalKeystoreProvider', () => {
  it('provisions a key whose signer has the provisioned address', async () => {
    const provider = new LocalKeystoreProvider(new KeySealer(randomBytes(32)));
    const { address, keyRef } = await provider.provision('wallet-9');
    const signer = await provider.signer('wallet-9', keyRef);
    expect(signer.address).toBe(address);
    // The sealed key is not the private key in any obvious encoding.
    const key = (signer as unknown as { source: string }).source;
    expect(key).toBe('privateKey');
    expect(keyRef).not.toMatch(/[0-9a-f]{64}/);
    expect(() => privateKeyToAccount(keyRef as `0x${string}`)).toThrow();
  });
});
