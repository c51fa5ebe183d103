// An exact EIP-3009 scheme client whose authorizations live only as long as they must: valid from the
// chain's time (not the signer's clock) for at most `maxSeconds`, or the requirement's maxTimeoutSeconds if
// shorter. The SDK's client signs for the whole maxTimeoutSeconds (an hour at some sellers) from the local
// clock, so a payment a seller refused stayed spendable that long. `accepted` still echoes the seller's
// requirement unchanged (the x402 client sets it), so sellers match the payload as usual.
import type { PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
import { randomBytes } from 'node:crypto';
import { getAddress, toHex, type Hex } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { BlockClock } from '../chain/block-clock.js';
import { transferWithAuthorizationTypes } from '../chain/eip3009.js';

/** How far before the chain's now an authorization is valid from: a node whose head lags must still accept it. */
const VALID_AFTER_SLACK_SECONDS = 600n;

export interface ShortLivedValidity {
  /** The chain's time (seconds). */
  chainTime: BlockClock;
  maxSeconds: number;
  /** Sign exactly this window and nonce (chosen, and recorded, before signing: planAuthorization). */
  planned?: PlannedAuthorization;
}

export interface PlannedAuthorization {
  nonce: Hex;
  validAfter: bigint;
  validBefore: bigint;
}

/** The nonce and validity window an authorization for `requirements` will be signed with. */
export async function planAuthorization(validity: ShortLivedValidity, requirements: Pick<PaymentRequirements, 'maxTimeoutSeconds'>): Promise<PlannedAuthorization> {
  const now = await validity.chainTime();
  const seconds = BigInt(Math.min(requirements.maxTimeoutSeconds, validity.maxSeconds));
  return { nonce: toHex(randomBytes(32)) as Hex, validAfter: now > VALID_AFTER_SLACK_SECONDS ? now - VALID_AFTER_SLACK_SECONDS : 0n, validBefore: now + seconds };
}

export function shortLivedExactScheme(account: LocalAccount, validity: ShortLivedValidity): SchemeNetworkClient {
  return {
    scheme: 'exact',
    async createPaymentPayload(x402Version: number, requirements: PaymentRequirements) {
      const extra = requirements.extra as { name?: unknown; version?: unknown } | undefined;
      if (typeof extra?.name !== 'string' || typeof extra.version !== 'string') throw new Error('the requirement names no EIP-712 domain (extra.name, extra.version)');
      const window = validity.planned ?? (await planAuthorization(validity, requirements));
      const authorization = {
        from: account.address,
        to: getAddress(requirements.payTo),
        value: BigInt(requirements.amount),
        validAfter: window.validAfter,
        validBefore: window.validBefore,
        nonce: window.nonce,
      };
      const signature = await account.signTypedData({
        domain: { name: extra.name, version: extra.version, chainId: Number(requirements.network.split(':')[1]), verifyingContract: getAddress(requirements.asset) },
        types: transferWithAuthorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: authorization,
      });
      return {
        x402Version,
        payload: {
          signature,
          authorization: {
            ...authorization,
            value: authorization.value.toString(),
            validAfter: authorization.validAfter.toString(),
            validBefore: authorization.validBefore.toString(),
          },
        },
      };
    },
  };
}
