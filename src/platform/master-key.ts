import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { loadOrCreateDevSecret } from './data-dir.js';
import { KeySealer } from './sealing.js';

export interface MasterKey {
  key: Buffer;
  /** WALLET_MASTER_KEY_PREVIOUS during a rotation: still opens what it sealed. */
  previous: Buffer | null;
  /** True when the key came from the data dir (embedded default), not WALLET_MASTER_KEY. */
  dev: boolean;
}

/** WALLET_MASTER_KEY, or a key generated once into the data dir (embedded default). */
export function loadMasterKey(config: Config): MasterKey {
  const previous = config.walletMasterKeyPrevious ? hexKey(config.walletMasterKeyPrevious) : null;
  if (config.walletMasterKey) return { key: hexKey(config.walletMasterKey), previous, dev: false };
  const hex = loadOrCreateDevSecret(config.dataDir, 'wallet-master.key', () => randomBytes(32).toString('hex'));
  return { key: Buffer.from(hex, 'hex'), previous, dev: true };
}

/** The sealer every module seals its secrets at rest with: the master key, and the previous one during a rotation. */
export function createKeySealer(config: Config): KeySealer {
  const master = loadMasterKey(config);
  return new KeySealer(master.key, master.previous);
}

const hexKey = (text: string) => Buffer.from(text.replace(/^0x/, ''), 'hex');
