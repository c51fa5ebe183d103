import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { toHex } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import { signPayment as signWithX402Client } from '../../x402/client.js';
import type { PaymentRow } from './store.js';
import type { ShortLivedValidity } from '../../x402/short-lived-scheme.js';

export interface SignedPayment {
  payload: PaymentPayload;
  /** Value of the PAYMENT-SIGNATURE header. */
  header: string;
  nonce: string;
  /** The authorization's validBefore, unix seconds. */
  validBefore: string;
}

/** The `pending` payment row of an authorization, recorded before its signature can leave the process. */
export function pendingPaymentRow(
  at: { id: string; walletId: string; credentialId: string; method: string; resource: string; requestId?: string; now: Date },
  signed: { x402Version: number; nonce: string; validBefore: string },
  requirement: PaymentRequirements,
): PaymentRow {
  return {
    id: at.id,
    walletId: at.walletId,
    credentialId: at.credentialId,
    status: 'pending',
    x402Version: signed.x402Version,
    scheme: requirement.scheme,
    network: requirement.network,
    asset: requirement.asset,
    amount: requirement.amount,
    payTo: requirement.payTo,
    nonce: signed.nonce,
    validBefore: signed.validBefore,
    method: at.method,
    resource: at.resource,
    upstreamStatus: null,
    transaction: null,
    settlement: null,
    error: null,
    // The request that asked (its X-Request-Id when the caller sent one): listed with the payment.
    requestId: at.requestId ?? null,
    createdAt: at.now,
    updatedAt: at.now,
  };
}

/**
 * Signs the chosen requirement (`exact` by EIP-3009, or an `upto` Permit2 permit for at most its amount, through the @x402 client), valid for no longer than `validity`
 * says. Its spend controls repeat the caller's cap, so a requirement above maxPayment could not be signed
 * even if the choice were wrong.
 */
export async function signPayment(account: LocalAccount, challenge: PaymentRequired, requirement: PaymentRequirements, maxAmount: string, validity: ShortLivedValidity): Promise<SignedPayment> {
  try {
    const { payload, header } = await signWithX402Client(account, { ...challenge, accepts: [requirement] }, {
      allow: [{ network: requirement.network, asset: requirement.asset, maxAmountPerPayment: maxAmount }],
      validity,
      upto: requirement.scheme === 'upto',
    });
    if (requirement.scheme === 'upto') {
      // Permit2: the row keeps the nonce as the 32-byte hex planned (the facilitator's key), the deadline as validBefore.
      const permit = (payload.payload as { permit2Authorization?: { nonce?: unknown; deadline?: unknown } }).permit2Authorization;
      if (typeof permit?.nonce !== 'string' || typeof permit.deadline !== 'string') throw new Error('the signed payload has no Permit2 authorization');
      return { payload, header, nonce: toHex(BigInt(permit.nonce), { size: 32 }), validBefore: permit.deadline };
    }
    const authorization = (payload.payload as { authorization?: { nonce?: unknown; validBefore?: unknown } }).authorization;
    const { nonce, validBefore } = authorization ?? {};
    if (typeof nonce !== 'string' || typeof validBefore !== 'string') throw new Error('the signed payload has no EIP-3009 authorization');
    return { payload, header, nonce, validBefore };
  } catch (error) {
    throw new ApiError(502, 'signing_failed', `x402 signing failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** How long this deployment's wallets sign for: from the chain's time, PAY_AND_CALL_AUTHORIZATION_SECONDS at most. */
export const authorizationValidity = (ctx: AppContext): ShortLivedValidity => ({ chainTime: ctx.chain.blockTime, maxSeconds: ctx.config.payAndCall.authorizationSeconds });
