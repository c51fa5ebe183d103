import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Database } from './db.js';
import { KeyRotation } from './key-rotation.js';
import type { KeySealer } from './sealing.js';
import { SecretHasher } from './secrets.js';

const OLD = 'o'.repeat(40);
const NEW = 'n'.repeat(40);

describe('KeyRotation.find during a pepper rotation', () => {
  it('finds a credential whose row moved to the current pepper between its lookups', async () => {
    const before = new SecretHasher(OLD);
    const during = new SecretHasher(NEW, OLD);
    const { secret, hash: oldHash } = before.issue('api');
    const newHash = during.hash(secret);
    // The rotation command moves the row right after the lookup under the current form missed it.
    let stored = oldHash;
    const asked: string[] = [];
    const lookup = async (hash: string) => {
      asked.push(hash);
      const found = hash === stored ? { id: 'cred' } : null;
      if (hash === newHash && stored === oldHash) stored = newHash;
      return found;
    };
    const rotation = new KeyRotation({} as Database, during, () => ({}) as KeySealer, pino({ level: 'silent' }));
    expect(await rotation.find(secret, lookup)).toEqual({ id: 'cred' });
    expect(asked[0]).toBe(newHash);
    expect(asked.at(-1)).toBe(newHash);
  });

  it('is null for an unknown secret, after one more look under the current form', async () => {
    const rotation = new KeyRotation({} as Database, new SecretHasher(NEW, OLD), () => ({}) as KeySealer, pino({ level: 'silent' }));
    let asked = 0;
    expect(await rotation.find('svc_api_unknown', async () => (asked++, null))).toBeNull();
    expect(asked).toBe(5);
  });
});
