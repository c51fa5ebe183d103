// batch-settlement refunds the receiver side signed: keyed by the channel's refund nonce (the contract's own counter),
// with the claims they need sent in the same transaction. This facilitator signs no refunds itself (settlements.ts
// says why). A refund takes the shared single-row path (the facilitator's execute), and its success names what it
// really moved and the channel after it.
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { encodeFunctionData, getAddress, isAddressEqual, type Address, type Hash, type Hex } from 'viem';
import { chainReads, failure, idConflict } from '../answers.js';
import { Reason } from '../reasons.js';
import { batchAbi, judgeRefundReceipt, readChannel } from './chain.js';
import { channelIdOf, contractClaims, contractConfig, refundKey, refundSchema, ZERO_ADDRESS } from './payload.js';
import { Err, exclusive, payloadHash, refusedForCode, withChannel, type BatchEngine, type BatchPorts } from './shared.js';
import type { Caller } from '../../../platform/request-context.js';

export class BatchRefunds {
  constructor(
    private readonly ports: BatchPorts,
    private readonly engine: BatchEngine,
  ) {}

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = refundSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.refundPayload, 'payload must be a completed batch-settlement refund (amount, refundNonce, claims)');
    const refund = parsed.data;
    const config = refund.channelConfig;
    if (!refund.refundAuthorizerSignature || (refund.claims.length > 0 && !refund.claimAuthorizerSignature)) {
      return failure(network, Err.authorizerNotConfigured, 'this facilitator signs no refunds or claims: include the receiverAuthorizer’s signatures', config.payer);
    }
    const channelId = channelIdOf(config, network);
    if (channelId.toLowerCase() !== refund.voucher.channelId.toLowerCase()) return failure(network, 'invalid_batch_settlement_evm_channel_id_mismatch', 'the channel config does not hash to the voucher’s channel id', config.payer);
    if (!isAddressEqual(config.receiver as Address, requirements.payTo as Address) || !isAddressEqual(config.token as Address, requirements.asset as Address)) {
      return failure(network, Reason.invalidPaymentRequirements, 'the channel pays another payTo or asset than the requirements', config.payer);
    }
    const key = refundKey(network, config, channelId, BigInt(refund.refundNonce));
    return exclusive(this.ports, this.engine, key, payload, requirements, caller, async () => {
      const call = { payloadHash: payloadHash(key, requirements, payload.payload), paymentId: null };
      const existing = await this.ports.ledger.find(key);
      if (existing) return this.#answer(await this.ports.resume(existing, call), channelId);
      const state = await chainReads(() => readChannel(this.ports.client, channelId));
      if (state.refundNonce !== BigInt(refund.refundNonce)) return failure(network, Err.refundPayload, `the channel's refund nonce is ${state.refundNonce}, not ${refund.refundNonce}: sign the refund again`, config.payer);
      const claimedAfter = refund.claims.reduce((max, c) => (channelIdOf(c.voucher.channel, network).toLowerCase() === channelId.toLowerCase() && BigInt(c.totalClaimed) > max ? BigInt(c.totalClaimed) : max), state.totalClaimed);
      if (claimedAfter >= state.balance || BigInt(refund.amount) === 0n) return failure(network, Err.refundNoBalance, 'nothing is left to refund in this channel', config.payer);
      // The contract checks the receiverAuthorizer's refund (and claim) signatures and the vouchers; the estimate under
      // the ceiling is the simulation that refuses a bad one before anything is sent. Code that would run at our gas
      // in those checks is refused first.
      const withCode = [config.receiverAuthorizer, ...refund.claims.filter((c) => c.voucher.channel.payerAuthorizer === ZERO_ADDRESS).map((c) => c.voucher.channel.payer)];
      for (const address of withCode) {
        if (await refusedForCode(this.ports, address)) return failure(network, Reason.payerHasCode, `${getAddress(address)} has code: its signature check would run at our gas`, config.payer);
      }
      await this.ports.gasFloat.require('own');
      await this.ports.policy?.charge(config.payer, requirements.payTo);
      const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
      const asked = performance.now();
      const claim = await this.ports.ledger.claim({
        ...key,
        kind: 'batch-refund',
        token: getAddress(config.token),
        payTo: getAddress(config.payer),
        amount: refund.amount,
        validBefore: '0',
        signature: refund.refundAuthorizerSignature!,
        payloadHash: call.payloadHash,
        paymentId: null,
        claimToken: crypto.randomUUID(),
        fromBlock: Number(fromBlock > 5n ? fromBlock - 5n : 0n),
        request: { payload, requirements },
      });
      if (claim.kind !== 'claimed') return claim.kind === 'exists' ? this.#answer(await this.ports.resume(claim.row, call), channelId) : idConflict(network, key.payer);
      return this.#answer(await this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked, route: caller?.route }), channelId);
    });
  }

  /** A refund's success names what it really moved (the contract caps it) and the channel after it. */
  async #answer(response: SettleResponse, channelId: Hex): Promise<SettleResponse> {
    if (!response.success || !response.transaction) return response;
    const receipt = await this.ports.client.getTransactionReceipt({ hash: response.transaction as Hash }).catch(() => null);
    const refunded = receipt ? judgeRefundReceipt(receipt, channelId) : null;
    return withChannel(this.ports, { ...response, ...(refunded?.amount !== undefined ? { amount: refunded.amount.toString() } : {}) }, channelId);
  }
}

/** refundWithSignature, after the claims it needs when there are any (the contract's own multicall: one transaction). */
export function refundCallData(refund: ReturnType<typeof refundSchema.parse>): Hex {
  const refundCall = encodeFunctionData({
    abi: batchAbi,
    functionName: 'refundWithSignature',
    args: [contractConfig(refund.channelConfig), BigInt(refund.amount), BigInt(refund.refundNonce), refund.refundAuthorizerSignature as Hex],
  });
  if (refund.claims.length === 0) return refundCall;
  const claimCall = encodeFunctionData({ abi: batchAbi, functionName: 'claimWithSignature', args: [contractClaims(refund.claims), refund.claimAuthorizerSignature as Hex] });
  return encodeFunctionData({ abi: batchAbi, functionName: 'multicall', args: [[claimCall, refundCall]] });
}
