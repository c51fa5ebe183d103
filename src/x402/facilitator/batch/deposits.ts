// batch-settlement deposits: one ERC-3009 authorization, executed through the canonical collector. A deposit takes
// the shared single-row path (the facilitator's execute): claim, send, judge by its AuthorizationUsed + Transfer
// pair, answer once. A deposit authorization already spent and never settled by us is a front-run: recorded and
// answered once when a transaction executed exactly this authorization, without sending anything.
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { encodeAbiParameters, encodeFunctionData, getAddress, type Hex } from 'viem';
import { ChainUnavailableError, isTransportError } from '../../../chain/errors.js';
import { eip3009Abi } from '../../../chain/eip3009.js';
import { ERC3009_DEPOSIT_COLLECTOR } from '../../../chain/x402-contracts.js';
import { chainReads, failure, idConflict } from '../answers.js';
import { timeBounds } from '../bounds.js';
import { keyString, type SettlementLedger } from '../ledger.js';
import { paymentIdOf } from '../payment-id.js';
import { Reason } from '../reasons.js';
import { settlementVerdict } from '../verdicts.js';
import { batchAbi } from './chain.js';
import { channelIdOf, contractConfig, depositKey, depositNonce, depositSchema } from './payload.js';
import { Err, exclusive, FRONT_RUN_LOOKBACK_BLOCKS, payloadHash, withChannel, type BatchEngine, type BatchPorts } from './shared.js';
import type { Caller } from '../../../platform/request-context.js';

export class BatchDeposits {
  constructor(
    private readonly ports: BatchPorts,
    private readonly engine: BatchEngine,
  ) {}

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = depositSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.depositPayload, 'payload must be a batch-settlement deposit');
    const { channelConfig: config, voucher, deposit } = parsed.data;
    const auth = deposit.authorization.erc3009Authorization;
    if (!auth) return failure(network, Reason.unsupportedPayloadType, 'only ERC-3009 deposits are settled here (the token supports receiveWithAuthorization): sign erc3009Authorization', config.payer);
    const channelId = channelIdOf(config, network);
    if (channelId.toLowerCase() !== voucher.channelId.toLowerCase()) return failure(network, 'invalid_batch_settlement_evm_channel_id_mismatch', 'the channel config does not hash to the voucher’s channel id', config.payer);
    const terms = this.ports.policy?.terms(config.payer, { ...requirements, amount: deposit.amount });
    if (terms) return failure(network, terms.reason, terms.message, config.payer);
    const paymentId = paymentIdOf(payload);
    if (!paymentId.ok) return failure(network, Reason.invalidPayload, paymentId.message, config.payer);
    const key = depositKey(network, config, depositNonce(channelId, auth.salt));
    const window = { authorization: { validAfter: auth.validAfter, validBefore: auth.validBefore } };
    const outOfBounds = timeBounds(requirements, window, await chainReads(() => this.ports.blockTime()));
    if (outOfBounds && !(await this.ports.ledger.find(key))) {
      return failure(network, outOfBounds.reason === Reason.validAfter ? Err.validAfter : Err.validBefore, outOfBounds.message, config.payer);
    }
    const answered = await exclusive(this.ports, this.engine, key, payload, requirements, caller, async () => {
      const call = { payloadHash: payloadHash(key, requirements, payload.payload), paymentId: paymentId.id };
      const named = paymentId.id ? await this.ports.ledger.findByPaymentId(key.payer, paymentId.id) : null;
      if (named && (keyString(named) !== keyString(key) || named.payloadHash !== call.payloadHash)) return idConflict(network, key.payer);
      const existing = named ?? (await this.ports.ledger.find(key));
      if (existing) return this.ports.resume(existing, call);
      const used = await chainReads(() =>
        this.ports.client.readContract({ address: getAddress(config.token), abi: eip3009Abi, functionName: 'authorizationState', args: [getAddress(config.payer), key.nonce as Hex] }),
      );
      const row = {
        ...key,
        kind: 'batch-deposit',
        payTo: ERC3009_DEPOSIT_COLLECTOR,
        amount: deposit.amount,
        validBefore: auth.validBefore,
        signature: auth.signature,
        payloadHash: call.payloadHash,
        paymentId: call.paymentId,
        request: { payload, requirements },
      };
      if (used) return this.#used(payload, requirements, row, call);
      const verdict = await this.engine.verify(payload, requirements);
      if (!verdict.isValid) return failure(network, verdict.invalidReason ?? Err.depositPayload, verdict.invalidMessage ?? 'invalid deposit', config.payer);
      await this.ports.gasFloat.require('own');
      await this.ports.policy?.charge(config.payer, requirements.payTo);
      const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
      const asked = performance.now();
      const claim = await this.ports.ledger.claim({ ...row, claimToken: crypto.randomUUID(), fromBlock: Number(fromBlock > 5n ? fromBlock - 5n : 0n) });
      if (claim.kind === 'id_conflict') return idConflict(network, key.payer);
      if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
      return this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked, route: caller?.route });
    });
    return withChannel(this.ports, answered, channelId);
  }

  /**
   * The deposit's authorization is spent and we hold no row: anyone may call deposit() with the payer's signature
   * (the collector binds the nonce to this channel, so the money went where the payer said). If a transaction
   * executed exactly this authorization (its paired transfer to the collector), it is the deposit: answered once.
   */
  async #used(payload: PaymentPayload, requirements: PaymentRequirements, row: Omit<Parameters<SettlementLedger['claim']>[0], 'claimToken' | 'fromBlock'>, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse> {
    const used = () => failure(requirements.network, Reason.nonceAlreadyUsed, 'the deposit authorization is already used or canceled', row.payer);
    const verdict = await this.ports.sdkVerify(payload, requirements).catch(() => null);
    // The SDK checks the signature before it simulates: only a payer-signed deposit may claim an execution.
    if (verdict && !verdict.isValid && /signature/.test(verdict.invalidReason ?? '')) return used();
    const latest = await chainReads(() => this.ports.client.getBlockNumber({ cacheTime: 2_000 }));
    const claim = await this.ports.ledger.claim({ ...row, claimToken: crypto.randomUUID(), fromBlock: Number(latest > FRONT_RUN_LOOKBACK_BLOCKS ? latest - FRONT_RUN_LOOKBACK_BLOCKS : 0n) });
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, row.payer);
    if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
    const found = await settlementVerdict(this.ports.client, claim.row, this.ports.blockTime).catch(async (error: unknown) => {
      await this.ports.ledger.release(claim.row, claim.row.claimToken);
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    });
    if (found.kind !== 'settled') {
      await this.ports.ledger.release(claim.row, claim.row.claimToken);
      return used();
    }
    return this.ports.finishOwned(claim.row, { success: true, transaction: found.txHash, network: requirements.network as `${string}:${string}`, payer: row.payer, amount: row.amount }, found.logIndex);
  }
}

/** The deposit call of a claimed deposit row (its send: settlements.ts). */
export function depositCallData(payload: PaymentPayload): Hex {
  const { channelConfig: config, deposit } = depositSchema.parse(payload.payload);
  const auth = deposit.authorization.erc3009Authorization!;
  // ERC3009DepositCollector.collect decodes (validAfter, validBefore, salt, signature).
  const collectorData = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [BigInt(auth.validAfter), BigInt(auth.validBefore), BigInt(auth.salt), auth.signature as Hex],
  );
  return encodeFunctionData({ abi: batchAbi, functionName: 'deposit', args: [contractConfig(config), BigInt(deposit.amount), ERC3009_DEPOSIT_COLLECTOR, collectorData] });
}
