// An `upto` permit (Permit2 through x402UptoPermit2Proxy) signed with a planned nonce and deadline, as
// short-lived-scheme.ts does for EIP-3009: the wallet records the nonce and the deadline before the signature
// exists, and the deadline comes from the chain's time (at most `maxSeconds`), not the signer's clock. The
// payload is the one the official @x402/evm upto client makes (createUptoPermit2Payload), field for field.
import type { PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
import { uptoPermit2WitnessTypes } from '@x402/evm';
import { getAddress, isAddress } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import { PERMIT2_ADDRESS, UPTO_PERMIT2_PROXY } from '../chain/x402-contracts.js';
import { planAuthorization, type ShortLivedValidity } from './short-lived-scheme.js';

export function shortLivedUptoScheme(account: LocalAccount, validity: ShortLivedValidity): SchemeNetworkClient {
  return {
    scheme: 'upto',
    async createPaymentPayload(x402Version: number, requirements: PaymentRequirements) {
      const facilitator = (requirements.extra as { facilitatorAddress?: unknown } | undefined)?.facilitatorAddress;
      if (typeof facilitator !== 'string' || !isAddress(facilitator)) throw new Error('the upto requirement names no facilitatorAddress (extra.facilitatorAddress)');
      const window = validity.planned ?? (await planAuthorization(validity, requirements));
      const message = {
        permitted: { token: getAddress(requirements.asset), amount: BigInt(requirements.amount) },
        spender: UPTO_PERMIT2_PROXY,
        nonce: BigInt(window.nonce),
        deadline: window.validBefore,
        witness: { to: getAddress(requirements.payTo), facilitator: getAddress(facilitator), validAfter: 0n },
      };
      const signature = await account.signTypedData({
        domain: { name: 'Permit2', chainId: Number(requirements.network.split(':')[1]), verifyingContract: PERMIT2_ADDRESS },
        types: uptoPermit2WitnessTypes,
        primaryType: 'PermitWitnessTransferFrom',
        message,
      });
      const permit2Authorization = {
        from: account.address,
        permitted: { token: message.permitted.token, amount: requirements.amount },
        spender: message.spender,
        nonce: message.nonce.toString(),
        deadline: message.deadline.toString(),
        witness: { to: message.witness.to, facilitator: message.witness.facilitator, validAfter: '0' },
      };
      return { x402Version, payload: { signature, permit2Authorization } };
    },
  };
}
