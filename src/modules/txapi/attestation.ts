import { type Address, type Hex } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';

// The payment attestation: EIP-712 typed data the service signs for every published record.
// Domain: name and version fixed; chainId is the payment's chain, so a signature cannot be replayed
// as a claim about another chain; no verifyingContract, because no contract verifies these and the
// token is already a signed field (one domain per chain, whatever the token).

export const ATTESTATION_DOMAIN_NAME = 'Tollgate Payment Attestation';
export const ATTESTATION_DOMAIN_VERSION = '2';
export const ATTESTATION_PRIMARY_TYPE = 'PaymentAttestation';

export const attestationTypes = {
  PaymentAttestation: [
    { name: 'paymentId', type: 'bytes32' },
    { name: 'payer', type: 'address' },
    { name: 'recipient', type: 'address' },
    { name: 'recipientSequence', type: 'uint256' },
    { name: 'token', type: 'address' },
    { name: 'amount', type: 'uint256' },
  ],
} as const;

export const attestationDomain = (chainId: number) =>
  ({ name: ATTESTATION_DOMAIN_NAME, version: ATTESTATION_DOMAIN_VERSION, chainId }) as const;

export interface AttestationMessage {
  paymentId: Hex;
  payer: Address;
  recipient: Address;
  recipientSequence: bigint;
  token: Address;
  amount: bigint;
}

/** Signs attestations with the configured key (ATTESTATION_PRIVATE_KEY, or the dev key). */
export class AttestationSigner {
  private readonly account: PrivateKeyAccount;

  constructor(privateKey: Hex) {
    this.account = privateKeyToAccount(privateKey);
  }

  get address(): Address {
    return this.account.address;
  }

  sign(chainId: number, message: AttestationMessage): Promise<Hex> {
    return this.account.signTypedData({
      domain: attestationDomain(chainId),
      types: attestationTypes,
      primaryType: ATTESTATION_PRIMARY_TYPE,
      message,
    });
  }
}
