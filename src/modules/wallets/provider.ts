import type { LocalAccount } from 'viem/accounts';

export interface ProvisionedKey {
  address: `0x${string}`;
  /** The provider's handle on the key, stored with the wallet and never returned (sealed key, KMS id). */
  keyRef: string;
}

/**
 * Where wallet keys live. The local keystore is the embedded implementation; a KMS adapter would
 * implement the same two calls. Implementations must never log or return key material.
 */
export interface WalletProvider {
  /** The wallet's `provider` field. */
  readonly name: string;
  provision(walletId: string): Promise<ProvisionedKey>;
  /** The wallet's signer (a KMS adapter wraps its remote signing with viem's `toAccount`). */
  signer(walletId: string, keyRef: string): Promise<LocalAccount>;
}
