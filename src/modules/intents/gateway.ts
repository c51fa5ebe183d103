import { getAddress, type Address, type Hex } from 'viem';
import { getBlock, readContract } from 'viem/actions';
import { eip3009Abi } from '../../chain/eip3009.js';
import { IndexedPayments } from '../txapi/payments.js';
import type { AppContext } from '../../context.js';
import { PaymentHeaderError } from '../../x402/server/errors.js';
import type { PaymentIndex, PaymentRail } from './payments.js';

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
    verify: (payload, requirements) => x402.verify(payload, requirements),
    settle: (payload, requirements) => x402.settle(payload, requirements),
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

/** Reads for reconciliation: the index of our facilitator's transactions, and the token's own state. */
export function paymentIndexOf(ctx: AppContext): PaymentIndex {
  const index = () => ctx.services.indexedPayments ?? new IndexedPayments(ctx.db);
  return {
    async findByAuthorization(key) {
      const chainId = chainIdOf(key.network);
      const found = await index().findByAuthorization(chainId, key.asset as Address, key.payer as Address, key.nonce as Hex);
      return found && { transactionHash: found.transactionHash.toLowerCase(), recipient: getAddress(found.recipient), value: found.value, blockTimestamp: found.blockTimestamp, final: found.final };
    },
    async authorizationState(key) {
      const client = ctx.chain.publicClient;
      // Block time first: anything mined after it cannot pass an already-passed validBefore.
      const block = await getBlock(client, { blockTag: 'latest' });
      const used = await readContract(client, {
        address: key.asset as Address,
        abi: eip3009Abi,
        functionName: 'authorizationState',
        args: [key.payer as Address, key.nonce as Hex],
        blockNumber: block.number,
      });
      return { used, chainTime: Number(block.timestamp) };
    },
  };
}

function chainIdOf(network: string): number {
  const match = /^eip155:(\d+)$/.exec(network);
  if (!match) throw new Error(`not an EVM network: ${network}`);
  return Number(match[1]);
}
