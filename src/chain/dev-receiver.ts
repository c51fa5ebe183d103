import { randomBytes } from 'node:crypto';
import { privateKeyToAccount } from 'viem/accounts';
import { loadOrCreateDevSecret } from '../platform/data-dir.js';

/**
 * A payee for the devchain when the operator named none: an address whose key is generated once into
 * the data dir (`name`), so payments to it survive restarts and can be spent in development.
 */
export function devReceiver(dataDir: string, name: string): string {
  const key = loadOrCreateDevSecret(dataDir, name, () => `0x${randomBytes(32).toString('hex')}`);
  return privateKeyToAccount(key as `0x${string}`).address;
}
