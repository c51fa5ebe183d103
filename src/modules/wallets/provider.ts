import type { Logger } from 'pino';
import type { LocalAccount } from 'viem/accounts';
import { ApiError } from '../../platform/http/errors.js';

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

/**
 * The wallet's signer for a call that must refuse without it: a provider that cannot give the key (a sealed key that
 * does not open, an unreachable KMS) is logged, and the call answered 502 `signing_failed` with `message`.
 */
export async function signerOrRefuse(provider: WalletProvider, wallet: { id: string; keyRef: string }, log: Logger, message: string): Promise<LocalAccount> {
  return provider.signer(wallet.id, wallet.keyRef).catch((error: unknown) => {
    log.error({ walletId: wallet.id, err: error }, 'wallet key unavailable');
    throw new ApiError(502, 'signing_failed', message);
  });
}
