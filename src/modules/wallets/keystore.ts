import { privateKeyToAccount, generatePrivateKey, type PrivateKeyAccount } from 'viem/accounts';
import type { ProvisionedKey, WalletProvider } from './provider.js';
import type { KeySealer } from '../../platform/sealing.js';

const CACHE_LIMIT = 1_000;

/** Local keystore: secp256k1 keys generated here and sealed with AES-256-GCM under the master key. */
export class LocalKeystoreProvider implements WalletProvider {
  readonly name = 'local';
  // Deriving the account costs a curve multiplication; keep recent ones (bounded, in memory only).
  private readonly accounts = new Map<string, PrivateKeyAccount>();

  constructor(private readonly sealer: KeySealer) {}

  async provision(walletId: string): Promise<ProvisionedKey> {
    const privateKey = generatePrivateKey();
    const { address } = privateKeyToAccount(privateKey);
    return { address, keyRef: this.sealer.seal(Buffer.from(privateKey.slice(2), 'hex'), walletId) };
  }

  async signer(walletId: string, keyRef: string): Promise<PrivateKeyAccount> {
    const cacheKey = `${walletId}:${keyRef}`;
    const cached = this.accounts.get(cacheKey);
    if (cached) return cached;
    const account = privateKeyToAccount(`0x${this.sealer.open(keyRef, walletId).toString('hex')}`);
    if (this.accounts.size >= CACHE_LIMIT) this.accounts.delete(this.accounts.keys().next().value!);
    this.accounts.set(cacheKey, account);
    return account;
  }
}
