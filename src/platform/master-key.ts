import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { loadOrCreateDevSecret } from './data-dir.js';

export interface MasterKey {
  key: Buffer;
  /** True when the key came from the data dir (embedded default), not WALLET_MASTER_KEY. */
  dev: boolean;
}

/** WALLET_MASTER_KEY, or a key generated once into the data dir (embedded default). */
export function loadMasterKey(config: Config): MasterKey {
  if (config.walletMasterKey) return { key: Buffer.from(config.walletMasterKey.replace(/^0x/, ''), 'hex'), dev: false };
  const hex = loadOrCreateDevSecret(config.dataDir, 'wallet-master.key', () => randomBytes(32).toString('hex'));
  return { key: Buffer.from(hex, 'hex'), dev: true };
}
