import type { Hex } from 'viem';
import { generatePrivateKey } from 'viem/accounts';
import type { Config } from '../../config.js';
import { isEmbeddedChain } from '../../chain/settings.js';
import { loadOrCreateDevSecret } from '../../platform/data-dir.js';

/**
 * The attestation key: ATTESTATION_PRIVATE_KEY, else a dev key kept in the data dir (stable across
 * restarts). On an external chain a per-node dev key would make nodes disagree on `signer`, so say so.
 */
export function loadAttestationKey(config: Config, log: { warn(msg: string): void }): Hex {
  const configured = config.txapi.attestationPrivateKey;
  if (configured) return (configured.startsWith('0x') ? configured : `0x${configured}`) as Hex;
  if (!isEmbeddedChain(config)) {
    log.warn('ATTESTATION_PRIVATE_KEY is not set: signing attestations with a key generated into the data dir');
  }
  return loadOrCreateDevSecret(config.dataDir, 'attestation-key', generatePrivateKey) as Hex;
}
