// Wallet keys held in AWS KMS (platform/aws-kms.ts): provision() creates a key per wallet and derives the
// address from its public key; the wallet's keyRef is the KMS key id.
import type { LocalAccount } from 'viem';
import { AwsKms, type AwsKmsOptions } from '../../platform/aws-kms.js';
import type { ProvisionedKey, WalletProvider } from './provider.js';

export class AwsKmsWalletProvider implements WalletProvider {
  readonly name = 'aws-kms';
  readonly #kms: AwsKms;

  constructor(options: AwsKmsOptions) {
    this.#kms = new AwsKms(options);
  }

  async provision(walletId: string): Promise<ProvisionedKey> {
    const keyId = await this.#kms.createKey(`Tollgate wallet ${walletId}`, [{ TagKey: 'tollgate-wallet', TagValue: walletId }]);
    return { address: await this.#kms.address(keyId), keyRef: keyId };
  }

  signer(_walletId: string, keyRef: string): Promise<LocalAccount> {
    return this.#kms.account(keyRef);
  }
}
