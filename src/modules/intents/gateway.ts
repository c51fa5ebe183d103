import { getBlock } from 'viem/actions';
import { authorizationOutcome } from '../../chain/payment-check.js';
import type { AppContext } from '../../context.js';
import { PaymentHeaderError } from '../../x402/server/errors.js';
import type { PaymentChain, PaymentRail } from './payments.js';

/** The payment rail over ctx.x402 (challenge, header codecs, verify and settle outcomes). */
export function paymentRailOf(ctx: AppContext): PaymentRail {
  const x402 = ctx.x402;
  return {
    async challenge(charge, error) {
      const paymentRequired = x402.paymentRequired(
        { ...charge.resource, amount: charge.amount, payTo: charge.payTo, maxTimeoutSeconds: charge.maxTimeoutSeconds, asset: assetOf(ctx, charge) },
        error,
      );
      return { paymentRequired, header: x402.encodePaymentRequired(paymentRequired) };
    },
    decode(header) {
      try {
        return x402.decodePayment(header);
      } catch (error) {
        if (error instanceof PaymentHeaderError) return null;
        throw error;
      }
    },
    select: (paymentRequired, payload) => x402.match(paymentRequired, payload),
    verify: (payload, requirements, caller) => x402.verify(payload, requirements, caller),
    settle: (payload, requirements, record, caller) => x402.settle(payload, requirements, record, caller),
    encodeResponse: (response) => x402.encodePaymentResponse(response),
  };
}

/** The intent's asset as the chain knows it: challenges use the asset the intent was created with. */
function assetOf(ctx: AppContext, charge: { network: string; asset: string }) {
  const asset = ctx.chain.asset;
  if (asset.network !== charge.network || asset.address.toLowerCase() !== charge.asset.toLowerCase()) {
    throw new Error(`intent asset ${charge.network}/${charge.asset} is not served by this chain (${asset.network}/${asset.address})`);
  }
  return asset;
}

/** How far back reconciliation looks for the transaction that used an authorization (~40 min on Robinhood Chain). */
const LOOKBACK_BLOCKS = 10_000n;

/** Reconciliation's reads: the one chain judgment every module uses, and the claim on the transfer. */
export function paymentChainOf(ctx: AppContext): PaymentChain {
  const client = ctx.chain.publicClient;
  return {
    async outcome(authorization) {
      const outcome = await authorizationOutcome(client, authorization, BigInt(authorization.validBefore), LOOKBACK_BLOCKS, ctx.config.txapi.confirmations);
      if (outcome.kind !== 'paid') return outcome;
      const block = await getBlock(client, { blockNumber: outcome.blockNumber });
      return { kind: 'paid', transactionHash: outcome.transactionHash.toLowerCase(), logIndex: outcome.logIndex, blockTimestamp: Number(block.timestamp) };
    },
    claim: (authorization, transactionHash, logIndex, record) => ctx.x402.claimPayment(record, authorization, { transactionHash, logIndex }),
  };
}
