// batch-settlement claims: one transaction for many voucher increments, one ledger row per increment (one success
// each, crash-safe, reconciled from the chain). A claim that names an increment the chain already holds (a replayed
// voucher, a cumulative amount that went backwards) or more than the channel holds (a channel drained by a
// withdrawal) is refused before anything is sent: on chain the first is a silent no-op that would still cost our
// gas, the second a revert. Each increment is judged by its own Claimed event.
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { encodeFunctionData, getAddress, isAddressEqual, type Address, type Hash, type Hex, type Log } from 'viem';
import { ChainUnavailableError } from '../../../chain/errors.js';
import { BATCH_SETTLEMENT } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { chainReads, failure } from '../answers.js';
import type { Refusal } from '../bounds.js';
import { newCallContext, runInCall } from '../call-context.js';
import { GasCeilingError } from '../gas-ceiling.js';
import { ownWords, Reason } from '../reasons.js';
import { BroadcastUncertainError } from '../sender.js';
import { batchAbi, judgeClaimReceipt, readChannel } from './chain.js';
import { channelIdOf, claimKey, claimPayloadSchema, contractClaims, ZERO_ADDRESS, type VoucherClaim } from './payload.js';
import { Err, payloadHash, refusedForCode, type BatchPorts } from './shared.js';

/** A claim transaction's own cost beyond its vouchers (the batch signature check, the call itself). */
export const CLAIM_BASE_GAS = 60_000n;

const domain = (chainId: number) => ({ name: 'x402 Batch Settlement', version: '1', chainId, verifyingContract: BATCH_SETTLEMENT });
const voucherTypes = { Voucher: [{ name: 'channelId', type: 'bytes32' }, { name: 'maxClaimableAmount', type: 'uint128' }] } as const;
const claimBatchTypes = {
  ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
  ClaimEntry: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
    { name: 'totalClaimed', type: 'uint128' },
  ],
} as const;

export class BatchClaims {
  constructor(private readonly ports: BatchPorts) {}

  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = claimPayloadSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.claimPayload, 'payload must be a batch-settlement claim (1 to 500 voucher claims)');
    const { claims, claimAuthorizerSignature } = parsed.data;
    // We hold no receiverAuthorizer key (see the header): the receiver side signs its own claim batches.
    if (!claimAuthorizerSignature) return failure(network, Err.authorizerNotConfigured, 'this facilitator signs no claims: include claimAuthorizerSignature from the channels’ receiverAuthorizer');
    const rows = claims.map((claim) => ({ claim, channelId: channelIdOf(claim.voucher.channel, network) }));
    const shape = this.#shape(rows, requirements);
    if (shape) return failure(network, shape.reason, shape.message);
    const keys = rows.map(({ claim, channelId }) => claimKey(network, claim.voucher.channel, channelId, BigInt(claim.totalClaimed)));
    const hash = payloadHash(keys[0]!, requirements, payload.payload);

    // Increments we already hold: the same claim again (a retry, a replay) is answered from its rows, never sent.
    const held = await Promise.all(keys.map((key) => this.ports.ledger.find(key)));
    if (held.some((row) => row)) return this.#held(held, hash, requirements);

    const refused = await this.#checks(rows, claimAuthorizerSignature as Hex);
    if (refused) return failure(network, refused.reason, refused.message);
    await this.ports.gasFloat.require('own');
    await this.ports.policy?.charge(requirements.payTo, requirements.payTo);
    const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
    const tokens = rows.map(() => crypto.randomUUID());
    const claimed = await Promise.all(
      rows.map(({ claim, channelId }, i) =>
        this.ports.ledger.claim({
          ...keys[i]!,
          kind: 'batch-claim',
          token: getAddress(claim.voucher.channel.token),
          payTo: getAddress(claim.voucher.channel.receiver),
          amount: claim.totalClaimed,
          validBefore: '0',
          signature: claim.signature,
          payloadHash: hash,
          paymentId: null,
          claimToken: tokens[i]!,
          fromBlock: Number(fromBlock > 5n ? fromBlock - 5n : 0n),
          request: { channelId, totalClaimed: claim.totalClaimed },
        }),
      ),
    );
    const release = () => Promise.all(claimed.map((c) => (c.kind === 'claimed' ? this.ports.ledger.release(c.row, c.row.claimToken) : undefined)));
    if (claimed.some((c) => c.kind !== 'claimed')) {
      // Another claim of one of these increments got there first (concurrently): it sends; this one answers from its rows.
      await release();
      return this.#held(await Promise.all(keys.map((key) => this.ports.ledger.find(key))), hash, requirements);
    }
    const owned = claimed.map((c) => (c as { row: SettlementRow }).row);
    // Answered pending, this call says no success: when the chain gives it, it is the same claim's retry's.
    const disown = () => Promise.all(owned.map((row) => this.ports.ledger.disown(row, row.claimToken)));
    const data = encodeFunctionData({ abi: batchAbi, functionName: 'claimWithSignature', args: [contractClaims(rows.map((r) => r.claim)), claimAuthorizerSignature as Hex] });
    const call = newCallContext();
    let txHash: Hash;
    try {
      txHash = await runInCall(call, () =>
        this.ports.signer.sendSettlement({ to: BATCH_SETTLEMENT, data, payer: requirements.payTo, alone: true, ceiling: CLAIM_BASE_GAS + this.ports.claimGasPerVoucher * BigInt(rows.length) }),
      );
    } catch (error) {
      if (error instanceof BroadcastUncertainError) {
        await Promise.all(owned.map((row) => this.ports.ledger.recordBroadcast(row, error.hash)));
        await disown();
        return failure(network, Reason.settlementPending, 'the claim may have been sent; retry the same claim', undefined, error.hash);
      }
      await release();
      if (call.gasRefusal || error instanceof GasCeilingError) return failure(network, Reason.gasOverCeiling, ownWords(Reason.gasOverCeiling));
      if (call.rpcFailure || call.sendFailure) throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
      return failure(network, 'invalid_batch_settlement_evm_claim_simulation_failed', 'the claim would revert on chain; nothing was sent');
    }
    await Promise.all(owned.map((row) => this.ports.ledger.recordBroadcast(row, txHash)));
    let receipt: { status: string; logs: readonly Log[] };
    try {
      const mined = await this.ports.signer.waitForTransactionReceipt({ hash: txHash });
      receipt = { status: mined.status, logs: (mined as { logs?: readonly Log[] }).logs ?? [] };
    } catch {
      // Not known yet: the rows stay open for the reconciler; the same claim again is answered from them.
      await disown();
      return failure(network, Reason.settlementPending, 'claim sent; outcome not known yet, retry the same claim', undefined, txHash);
    }
    // Each increment by its own Claimed event: a row the chain skipped (claimed higher meanwhile) paid nothing.
    const outcomes = await Promise.all(
      owned.map((row, i) => {
        const verdict = judgeClaimReceipt(receipt, rows[i]!.channelId, BigInt(rows[i]!.claim.totalClaimed));
        const response = verdict.ok ? claimSuccess(network, txHash) : failure(network, verdict.reason, verdict.message, row.payer, txHash);
        return this.ports.finishOwned(row, response);
      }),
    );
    const lost = outcomes.findIndex((o) => !o.success);
    if (lost >= 0) return failure(network, outcomes[lost]!.errorReason ?? Err.claimFailed, `channel ${rows[lost]!.channelId}: ${outcomes[lost]!.errorMessage ?? 'not claimed'}`, undefined, txHash);
    return claimSuccess(network, txHash);
  }

  /** One claim batch, whole: what the contract would revert on, and what we settle only for the requirements' receiver. */
  #shape(rows: Array<{ claim: VoucherClaim; channelId: Hex }>, requirements: PaymentRequirements): Refusal | null {
    const authorizer = rows[0]!.claim.voucher.channel.receiverAuthorizer;
    const seen = new Set<string>();
    for (const { claim, channelId } of rows) {
      const c = claim.voucher.channel;
      if (!isAddressEqual(c.receiverAuthorizer as Address, authorizer as Address)) return { reason: Err.claimPayload, message: 'every claim of a batch has the same receiverAuthorizer' };
      if (!isAddressEqual(c.receiver as Address, requirements.payTo as Address) || !isAddressEqual(c.token as Address, requirements.asset as Address)) {
        return { reason: Err.claimPayload, message: 'every claimed channel pays the requirements’ payTo in its asset' };
      }
      if (seen.has(channelId)) return { reason: Err.claimPayload, message: `channel ${channelId} is claimed twice in one batch` };
      seen.add(channelId);
      if (BigInt(claim.totalClaimed) > BigInt(claim.voucher.maxClaimableAmount)) return { reason: Err.claimPayload, message: `channel ${channelId}: totalClaimed is above the voucher's maxClaimableAmount` };
      if (BigInt(claim.totalClaimed) === 0n) return { reason: Err.belowClaimed, message: `channel ${channelId}: a claim of 0 claims nothing` };
    }
    return null;
  }

  /**

   * any gas), payers and authorizers with code refused, and every increment above what the chain has claimed and
   * within what the channel holds, at one pinned block; together at least the minimum amount.
   */
  async #checks(rows: Array<{ claim: VoucherClaim; channelId: Hex }>, batchSignature: Hex): Promise<Refusal | null> {
    const { client, chainId } = this.ports;
    const authorizer = getAddress(rows[0]!.claim.voucher.channel.receiverAuthorizer);
    if (await refusedForCode(this.ports, authorizer)) return { reason: Reason.payerHasCode, message: 'the receiverAuthorizer has code: its signature check would run at our gas' };
    const batchOk = await chainReads(() =>
      client.verifyTypedData({
        address: authorizer,
        domain: domain(chainId),
        types: claimBatchTypes,
        primaryType: 'ClaimBatch',
        message: { claims: rows.map(({ claim, channelId }) => ({ channelId, maxClaimableAmount: BigInt(claim.voucher.maxClaimableAmount), totalClaimed: BigInt(claim.totalClaimed) })) },
        signature: batchSignature,
      }),
    ).catch(() => false);
    if (!batchOk) return { reason: Err.claimSignature, message: 'claimAuthorizerSignature is not the receiverAuthorizer’s over this batch' };
    for (const { claim, channelId } of rows) {
      const c = claim.voucher.channel;
      const signer = c.payerAuthorizer === ZERO_ADDRESS ? getAddress(c.payer) : getAddress(c.payerAuthorizer);
      if (c.payerAuthorizer === ZERO_ADDRESS && (await refusedForCode(this.ports, c.payer))) return { reason: Reason.payerHasCode, message: `channel ${channelId}: ${ownWords(Reason.payerHasCode)}` };
      const ok = await chainReads(() =>
        client.verifyTypedData({ address: signer, domain: domain(chainId), types: voucherTypes, primaryType: 'Voucher', message: { channelId, maxClaimableAmount: BigInt(claim.voucher.maxClaimableAmount) }, signature: claim.signature as Hex }),
      ).catch(() => false);
      if (!ok) return { reason: Err.voucherSignature, message: `channel ${channelId}: the voucher is not signed by its payer` };
    }
    const block = await chainReads(() => client.getBlockNumber({ cacheTime: 0 }));
    const states = await chainReads(() => Promise.all(rows.map(({ channelId }) => readChannel(client, channelId, block))));
    let increments = 0n;
    for (const [i, { claim, channelId }] of rows.entries()) {
      const total = BigInt(claim.totalClaimed);
      const state = states[i]!;
      if (total <= state.totalClaimed) {
        return { reason: Err.belowClaimed, message: `channel ${channelId}: ${total} is not above the ${state.totalClaimed} already claimed (a replayed or backwards voucher): nothing was sent` };
      }
      if (total > state.balance) {
        return { reason: Err.exceedsBalance, message: `channel ${channelId}: ${total} is above the ${state.balance} the channel holds (drained by a withdrawal?): nothing was sent` };
      }
      increments += total - state.totalClaimed;
    }
    const minimum = this.ports.policy?.options.minSettleAmount ?? 0n;
    if (increments < minimum) return { reason: Reason.invalidPaymentRequirements, message: `the claim moves ${increments} in all, below this facilitator's minimum of ${minimum}` };
    return null;
  }

  /** A claim whose increments we already hold: one success per increment, so only their owner's open rows are waited for. */
  async #held(held: Array<SettlementRow | null>, hash: string, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const rows = held.filter((r): r is SettlementRow => r !== null);
    if (rows.length !== held.length || rows.some((r) => r.payloadHash !== hash)) {
      return failure(network, Err.belowClaimed, 'an increment of this claim was already claimed by another claim: nothing was sent', undefined, rows.find((r) => r.txHash)?.txHash ?? '');
    }
    const answers = await Promise.all(rows.map((row) => this.ports.resume(row, { payloadHash: hash, paymentId: null })));
    const bad = answers.find((a) => !a.success);
    return bad ? { ...bad, errorReason: bad.errorReason === Reason.nonceAlreadyUsed ? Err.belowClaimed : bad.errorReason } : claimSuccess(network, answers[0]!.transaction as Hash);
  }
}

const claimSuccess = (network: string, transaction: Hash): SettleResponse => ({ success: true, transaction, network: network as `${string}:${string}`, amount: '' });
