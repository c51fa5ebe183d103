// Deposit keys: each project has one random 32-byte seed, sealed under the master key like a wallet key (bound
// to the project, so a sealed seed copied onto another project's row does not open), and each intent's deposit
// key is derived from that seed and the intent's id. Ids are unique, so no two intents share a key; the key
// is derived again whenever it must sign (a sweep), so only the sealed seed is ever stored.
import { createHmac } from 'node:crypto';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { KeySealer } from '../../platform/sealing.js';

/** secp256k1's group order: a private key is an integer in [1, n − 1]. */
const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The associated data a project's deposit seed is sealed with. */
export const sealedFor = (projectId: string) => `intents:deposit-seed:${projectId}`;

export class DepositKeys {
  constructor(private readonly sealer: KeySealer) {}

  seal(seed: Buffer, projectId: string): string {
    return this.sealer.seal(seed, sealedFor(projectId));
  }

  /** The intent's deposit account (its key, to sign a sweep; its address, to show). */
  account(sealedSeed: string, projectId: string, intentId: string): PrivateKeyAccount {
    const seed = this.sealer.open(sealedSeed, sealedFor(projectId));
    try {
      return privateKeyToAccount(deriveKey(seed, intentId));
    } finally {
      seed.fill(0);
    }
  }
}

/**
 * HMAC-SHA512(seed, label + intentId), its first 32 bytes as the key (BIP32's own derivation step is this HMAC);
 * the counter moves on in the ~2^-128 case that they fall outside [1, n − 1].
 */
export function deriveKey(seed: Buffer, intentId: string): `0x${string}` {
  for (let counter = 0; ; counter++) {
    const digest = createHmac('sha512', seed).update(`tollgate/intent-deposit/v1/${intentId}/${counter}`).digest();
    const key = BigInt(`0x${digest.subarray(0, 32).toString('hex')}`);
    if (key > 0n && key < CURVE_ORDER) return `0x${key.toString(16).padStart(64, '0')}`;
  }
}
