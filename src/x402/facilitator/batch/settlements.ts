// batch-settlement through our facilitator (x402BatchSettlement, @x402/evm 2.27), with the guarantees of every
// other path: the settle policy (minimum amount, payer ≠ payee, budgets), the gas float, payers with code refused,
// a gas ceiling decided by an estimate before each send, the ledger (one success per deposit authorization and per
// voucher increment, crash-safe, reconciled from the chain) and judgment by each operation's own event.
//
// What the facilitator is asked to do, and how:
// - verify a deposit, a voucher or a refund: the SDK's checks (channel config, signatures, balance, the cumulative
//   amount never below what the chain has claimed) after ours (terms, payers with code);
// - settle a deposit: one ERC-3009 authorization, executed through the canonical collector. It takes the shared
//   single-row path (#execute): claim, send, judge by its AuthorizationUsed + Transfer pair, answer once;
// - settle a claim: one transaction for many voucher increments, one ledger row per increment. A claim that names
//   an increment the chain already holds (a replayed voucher, a cumulative amount that went backwards) or more
//   than the channel holds (a channel drained by a withdrawal) is refused before anything is sent: on chain the
//   first is a silent no-op that would still cost our gas, the second a revert;
// - settle a sweep (`settle(receiver, token)`): moves what was claimed; paid only where its Settled event says so;
// - settle a refund the receiver side signed: keyed by the channel's refund nonce, the contract's own counter.
//
// This facilitator advertises no receiverAuthorizer: it never signs claims or refunds for a seller. Anyone can call
// /settle, and a facilitator that signed refunds on request would let a payer refund its unclaimed vouchers'
// escrow before the seller claimed them (the "drained before claim" attack): sellers sign with their own key.
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { encodeAbiParameters, encodeFunctionData, getAddress, isAddress, isAddressEqual, keccak256, toBytes, type Address, type Hash, type Hex, type Log, type PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { BlockClock } from '../../../chain/block-clock.js';
import { ChainUnavailableError, isTransportError } from '../../../chain/errors.js';
import { findAsset } from '../../../chain/registry.js';
import { BATCH_SETTLEMENT, ERC3009_DEPOSIT_COLLECTOR } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { chainReads, failure, idConflict, invalid } from '../answers.js';
import { timeBounds, type Refusal } from '../bounds.js';
import { newCallContext, runInCall } from '../call-context.js';
import type { GasFloat } from '../gas-float.js';
import { GasCeilingError } from '../gas-ceiling.js';
import { keyString, type SettlementKey, type SettlementLedger } from '../ledger.js';
import type { ContractPayers, PayerCode } from '../payer-code.js';
import { paymentIdOf } from '../payment-id.js';
import { ownWords, Reason } from '../reasons.js';
import type { SettlePolicy } from '../settle-policy.js';
import { BroadcastUncertainError } from '../sender.js';
import type { FacilitatorSigner } from '../signer.js';
import { settlementVerdict } from '../verdicts.js';
import { eip3009Abi } from '../../../chain/eip3009.js';
import { batchAbi, judgeClaimReceipt, judgeRefundReceipt, readChannel, snapshotOf, sweptBy } from './chain.js';
import {
  channelIdOf,
  claimKey,
  claimPayloadSchema,
  contractClaims,
  contractConfig,
  depositKey,
  depositNonce,
  depositSchema,
  refundKey,
  refundSchema,
  sweepSchema,
  ZERO_ADDRESS,
  type ChannelConfig,
  type VoucherClaim,
} from './payload.js';

export const BATCH_SCHEME = 'batch-settlement';

/** What the facilitator lends this engine (as for Permit2: its parts, and the single-row steps after a claim). */
export interface BatchPorts {
  network: string;
  chainId: number;
  client: PublicClient;
  ledger: SettlementLedger;
  signer: FacilitatorSigner;
  blockTime: BlockClock;
  log: Logger;
  policy: SettlePolicy | null;
  gasFloat: GasFloat;
  payerCode: PayerCode;
  contractPayers: ContractPayers;
  /** FACILITATOR_MAX_BATCH_SETTLEMENT_GAS: a deposit, a sweep, a refund (plus its claims' share). */
  maxGas: bigint;
  /** FACILITATOR_MAX_CLAIM_GAS_PER_VOUCHER: a claim's ceiling is this per voucher plus CLAIM_BASE_GAS. */
  claimGasPerVoucher: bigint;
  sdkVerify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  inflight: Map<string, Promise<SettleResponse>>;
  resume(row: SettlementRow, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse>;
  execute(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, options: { claimAskedAt: number }): Promise<SettleResponse>;
  finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex?: number): Promise<SettleResponse>;
}

/** A claim transaction's own cost beyond its vouchers (the batch signature check, the call itself). */
export const CLAIM_BASE_GAS = 60_000n;
const FRONT_RUN_LOOKBACK_BLOCKS = 10_000n;

const Err = {
  payloadType: 'invalid_batch_settlement_evm_payload_type',
  claimPayload: 'invalid_batch_settlement_evm_claim_payload',
  depositPayload: 'invalid_batch_settlement_evm_deposit_payload',
  refundPayload: 'invalid_batch_settlement_evm_refund_payload',
  belowClaimed: 'invalid_batch_settlement_evm_cumulative_below_claimed',
  exceedsBalance: 'invalid_batch_settlement_evm_cumulative_exceeds_balance',
  voucherSignature: 'invalid_batch_settlement_evm_voucher_signature',
  authorizerNotConfigured: 'invalid_batch_settlement_evm_authorizer_not_configured',
  claimSignature: 'invalid_batch_settlement_evm_claim_signature',
  nothingToSettle: 'invalid_batch_settlement_evm_nothing_to_settle',
  refundNoBalance: 'invalid_batch_settlement_evm_refund_no_balance',
  claimFailed: 'invalid_batch_settlement_evm_claim_transaction_failed',
  depositFailed: 'invalid_batch_settlement_evm_deposit_transaction_failed',
  validBefore: 'invalid_batch_settlement_evm_payload_authorization_valid_before',
  validAfter: 'invalid_batch_settlement_evm_payload_authorization_valid_after',
} as const;

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

export class BatchSettlements {
  /** Sweeps this process is sending, per (receiver, token): a second one would move nothing and still cost gas. */
  readonly #sweeps = new Map<string, Promise<SettleResponse>>();

  constructor(private readonly ports: BatchPorts) {}

  handles(_payload: PaymentPayload, requirements: PaymentRequirements): boolean {
    return requirements.scheme === BATCH_SCHEME;
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const refused = this.#request(payload, requirements);
    if (refused) return invalid(refused.reason, refused.message);
    const type = (payload.payload as { type?: unknown }).type;
    if (type === 'deposit') {
      const deposit = depositSchema.safeParse(payload.payload);
      if (!deposit.success) return invalid(Err.depositPayload, 'payload must be a batch-settlement deposit');
      const config = deposit.data.channelConfig;
      const terms = this.ports.policy?.terms(config.payer, { ...requirements, amount: deposit.data.deposit.amount });
      if (terms) return invalid(terms.reason, terms.message, config.payer);
      if (await this.#refusedForCode(config.payer)) return invalid(Reason.payerHasCode, ownWords(Reason.payerHasCode), config.payer);
    } else if (type === 'voucher' || type === 'refund') {
      const config = (payload.payload as { channelConfig?: ChannelConfig }).channelConfig;
      // A voucher signed by a payer with code is checked on chain by that code, at our gas (each claim).
      if (config && isAddress(config.payer) && config.payerAuthorizer === ZERO_ADDRESS && (await this.#refusedForCode(config.payer))) {
        return invalid(Reason.payerHasCode, ownWords(Reason.payerHasCode), config.payer);
      }
    } else {
      return invalid(Err.payloadType, 'only deposit, voucher and refund payloads are verified; claim and settle are the receiver side’s, sent to /settle');
    }
    const verdict = await this.ports.sdkVerify(payload, requirements);
    return verdict.isValid ? verdict : { ...verdict, invalidMessage: ownWords(verdict.invalidReason) };
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const refused = this.#request(payload, requirements);
    if (refused) return failure(requirements.network, refused.reason, refused.message);
    switch ((payload.payload as { type?: unknown }).type) {
      case 'deposit':
        return this.#settleDeposit(payload, requirements);
      case 'claim':
        return this.#settleClaim(payload, requirements);
      case 'settle':
        return this.#sweep(payload, requirements);
      case 'refund':
        return this.#settleRefund(payload, requirements);
      default:
        // A voucher moves nothing on chain: the seller commits it (and later claims it); there is nothing to settle.
        return failure(requirements.network, Err.payloadType, 'vouchers are committed by the seller and claimed in batches; settle takes deposit, claim, settle and refund payloads');
    }
  }

  /** The request-level rules every batch-settlement call meets before anything is read from the chain. */
  #request(payload: PaymentPayload, requirements: PaymentRequirements): Refusal | null {
    if (payload.x402Version !== 2) return { reason: Reason.invalidX402Version, message: `x402Version ${payload.x402Version} is not supported; use 2` };
    if (requirements.network !== this.ports.network) return { reason: Reason.invalidNetwork, message: `network ${requirements.network} is not supported; use ${this.ports.network}` };
    if (payload.accepted.scheme !== BATCH_SCHEME || payload.accepted.network !== requirements.network) return { reason: 'invalid_batch_settlement_evm_scheme', message: 'the payload was made for another scheme or network' };
    if (!findAsset(this.ports.network, requirements.asset)) return { reason: Reason.invalidPaymentRequirements, message: `asset ${requirements.asset} is not supported on ${this.ports.network}` };
    if (!isAddress(requirements.payTo)) return { reason: Reason.invalidPaymentRequirements, message: 'payTo must be an EVM address' };
    return null;
  }

  async #refusedForCode(address: string): Promise<boolean> {
    if (this.ports.contractPayers === 'allow') return false;
    return chainReads(() => this.ports.payerCode.hasCode(getAddress(address)));
  }

  // ---- deposits: one ERC-3009 authorization, the shared single-row path ----

  async #settleDeposit(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
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
    const answered = await this.#exclusive(key, payload, requirements, async () => {
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
      if (used) return this.#depositUsed(payload, requirements, row, call);
      const verdict = await this.verify(payload, requirements);
      if (!verdict.isValid) return failure(network, verdict.invalidReason ?? Err.depositPayload, verdict.invalidMessage ?? 'invalid deposit', config.payer);
      await this.ports.gasFloat.require('own');
      await this.ports.policy?.charge(config.payer, requirements.payTo);
      const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
      const asked = performance.now();
      const claim = await this.ports.ledger.claim({ ...row, claimToken: crypto.randomUUID(), fromBlock: Number(fromBlock > 5n ? fromBlock - 5n : 0n) });
      if (claim.kind === 'id_conflict') return idConflict(network, key.payer);
      if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
      return this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked });
    });
    return this.#withChannel(answered, channelId);
  }

  /**
   * The deposit's authorization is spent and we hold no row: anyone may call deposit() with the payer's signature
   * (the collector binds the nonce to this channel, so the money went where the payer said). If a transaction
   * executed exactly this authorization (its paired transfer to the collector), it is the deposit: answered once.
   */
  async #depositUsed(payload: PaymentPayload, requirements: PaymentRequirements, row: Omit<Parameters<SettlementLedger['claim']>[0], 'claimToken' | 'fromBlock'>, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse> {
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

  /** A successful deposit or refund answer carries the channel's state after it (what the SDK's server mirrors). */
  async #withChannel(response: SettleResponse, channelId: Hex): Promise<SettleResponse> {
    if (!response.success) return response;
    const state = await readChannel(this.ports.client, channelId).catch(() => null);
    return state ? { ...response, extra: { ...(response.extra ?? {}), channelState: snapshotOf(channelId, state) } } : response;
  }

  /**
   * The send of a claimed deposit or refund row (the facilitator's #execute calls it inside the settle's call
   * context, so the hash reaches the ledger the moment it leaves): alone, estimated under this scheme's ceiling.
   */
  async send(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    let data: Hex;
    let ceiling = this.ports.maxGas;
    if (row.kind === 'batch-deposit') {
      const { channelConfig: config, deposit } = depositSchema.parse(payload.payload);
      const auth = deposit.authorization.erc3009Authorization!;
      // ERC3009DepositCollector.collect decodes (validAfter, validBefore, salt, signature).
      const collectorData = encodeAbiParameters(
        [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
        [BigInt(auth.validAfter), BigInt(auth.validBefore), BigInt(auth.salt), auth.signature as Hex],
      );
      data = encodeFunctionData({ abi: batchAbi, functionName: 'deposit', args: [contractConfig(config), BigInt(deposit.amount), ERC3009_DEPOSIT_COLLECTOR, collectorData] });
    } else {
      const refund = refundSchema.parse(payload.payload);
      data = refundCallData(refund);
      ceiling += this.ports.claimGasPerVoucher * BigInt(refund.claims.length);
    }
    let hash: Hash;
    try {
      hash = await this.ports.signer.sendSettlement({ to: BATCH_SETTLEMENT, data, payer: row.payer, alone: true, ceiling });
    } catch {
      return failure(network, row.kind === 'batch-deposit' ? Err.depositFailed : 'invalid_batch_settlement_evm_refund_transaction_failed', 'settlement transaction not sent', row.payer);
    }
    try {
      const receipt = await this.ports.signer.waitForTransactionReceipt({ hash });
      return receipt.status === 'success'
        ? { success: true, transaction: hash, network, payer: row.payer }
        : failure(network, row.kind === 'batch-deposit' ? Err.depositFailed : 'invalid_batch_settlement_evm_refund_transaction_failed', 'settlement transaction reverted', row.payer, hash);
    } catch (error) {
      return failure(network, Reason.settlementPending, error instanceof Error ? error.message.split('\n')[0]! : 'receipt not seen yet', row.payer, hash);
    }
  }

  // ---- claims: many voucher increments, one transaction, one ledger row each ----

  async #settleClaim(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = claimPayloadSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.claimPayload, 'payload must be a batch-settlement claim (1 to 500 voucher claims)');
    const { claims, claimAuthorizerSignature } = parsed.data;
    // We hold no receiverAuthorizer key (see the header): the receiver side signs its own claim batches.
    if (!claimAuthorizerSignature) return failure(network, Err.authorizerNotConfigured, 'this facilitator signs no claims: include claimAuthorizerSignature from the channels’ receiverAuthorizer');
    const rows = claims.map((claim) => ({ claim, channelId: channelIdOf(claim.voucher.channel, network) }));
    const shape = this.#claimShape(rows, requirements);
    if (shape) return failure(network, shape.reason, shape.message);
    const keys = rows.map(({ claim, channelId }) => claimKey(network, claim.voucher.channel, channelId, BigInt(claim.totalClaimed)));
    const hash = payloadHash(keys[0]!, requirements, payload.payload);

    // Increments we already hold: the same claim again (a retry, a replay) is answered from its rows, never sent.
    const held = await Promise.all(keys.map((key) => this.ports.ledger.find(key)));
    if (held.some((row) => row)) return this.#heldClaim(held, hash, requirements);

    const refused = await this.#claimChecks(rows, claimAuthorizerSignature as Hex);
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
      return this.#heldClaim(await Promise.all(keys.map((key) => this.ports.ledger.find(key))), hash, requirements);
    }
    const owned = claimed.map((c) => (c as { row: SettlementRow }).row);
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
  #claimShape(rows: Array<{ claim: VoucherClaim; channelId: Hex }>, requirements: PaymentRequirements): Refusal | null {
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
   * The signatures and the chain: the receiver side's batch signature and each payer's voucher (off chain, before
   * any gas), payers and authorizers with code refused, and every increment above what the chain has claimed and
   * within what the channel holds, at one pinned block; together at least the minimum amount.
   */
  async #claimChecks(rows: Array<{ claim: VoucherClaim; channelId: Hex }>, batchSignature: Hex): Promise<Refusal | null> {
    const { client, chainId } = this.ports;
    const authorizer = getAddress(rows[0]!.claim.voucher.channel.receiverAuthorizer);
    if (await this.#refusedForCode(authorizer)) return { reason: Reason.payerHasCode, message: 'the receiverAuthorizer has code: its signature check would run at our gas' };
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
      if (c.payerAuthorizer === ZERO_ADDRESS && (await this.#refusedForCode(c.payer))) return { reason: Reason.payerHasCode, message: `channel ${channelId}: ${ownWords(Reason.payerHasCode)}` };
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
  async #heldClaim(held: Array<SettlementRow | null>, hash: string, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const rows = held.filter((r): r is SettlementRow => r !== null);
    if (rows.length !== held.length || rows.some((r) => r.payloadHash !== hash)) {
      return failure(network, Err.belowClaimed, 'an increment of this claim was already claimed by another claim: nothing was sent', undefined, rows.find((r) => r.txHash)?.txHash ?? '');
    }
    const answers = await Promise.all(rows.map((row) => this.ports.resume(row, { payloadHash: hash, paymentId: null })));
    const bad = answers.find((a) => !a.success);
    return bad ? { ...bad, errorReason: bad.errorReason === Reason.nonceAlreadyUsed ? Err.belowClaimed : bad.errorReason } : claimSuccess(network, answers[0]!.transaction as Hash);
  }

  // ---- sweeps: move what was claimed ----

  async #sweep(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    const parsed = sweepSchema.safeParse(payload.payload);
    if (!parsed.success) return failure(network, Err.payloadType, 'payload must be {type: "settle", receiver, token}');
    const receiver = getAddress(parsed.data.receiver);
    const token = getAddress(parsed.data.token);
    if (!isAddressEqual(receiver, requirements.payTo as Address) || !isAddressEqual(token, requirements.asset as Address)) {
      return failure(network, Reason.invalidPaymentRequirements, 'a sweep pays the requirements’ payTo in their asset');
    }
    const id = `${receiver}|${token}`;
    const running = this.#sweeps.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.#sweep(payload, requirements);
    }
    const sweeping = this.#sendSweep(receiver, token, network);
    this.#sweeps.set(id, sweeping);
    try {
      return await sweeping;
    } finally {
      this.#sweeps.delete(id);
    }
  }

  async #sendSweep(receiver: Address, token: Address, network: string): Promise<SettleResponse> {
    const [claimed, settled] = await chainReads(() => this.ports.client.readContract({ address: BATCH_SETTLEMENT, abi: batchAbi, functionName: 'receivers', args: [receiver, token] }));
    const pending = claimed - settled;
    if (pending === 0n) return failure(network, Err.nothingToSettle, 'nothing claimed is waiting to be settled for this receiver and token');
    const minimum = this.ports.policy?.options.minSettleAmount ?? 0n;
    if (pending < minimum) return failure(network, Reason.invalidPaymentRequirements, `${pending} is below this facilitator's minimum of ${minimum}: claim more first`);
    await this.ports.gasFloat.require('own');
    await this.ports.policy?.charge(receiver, receiver);
    const data = encodeFunctionData({ abi: batchAbi, functionName: 'settle', args: [receiver, token] });
    const call = newCallContext();
    let hash: Hash;
    try {
      hash = await runInCall(call, () => this.ports.signer.sendSettlement({ to: BATCH_SETTLEMENT, data, payer: receiver, alone: true, ceiling: this.ports.maxGas }));
    } catch (error) {
      if (error instanceof BroadcastUncertainError) return failure(network, Reason.settlementPending, 'the sweep may have been sent; its outcome is on chain', undefined, error.hash);
      if (call.gasRefusal || error instanceof GasCeilingError) return failure(network, Reason.gasOverCeiling, ownWords(Reason.gasOverCeiling));
      if (call.rpcFailure || call.sendFailure) throw new ChainUnavailableError(call.rpcFailure ?? call.sendFailure);
      return failure(network, 'invalid_batch_settlement_evm_settle_simulation_failed', 'the sweep would revert; nothing was sent');
    }
    try {
      const mined = await this.ports.signer.waitForTransactionReceipt({ hash });
      const swept = sweptBy({ status: mined.status, logs: (mined as { logs?: readonly Log[] }).logs ?? [] }, receiver, token);
      if (!swept) return failure(network, Err.nothingToSettle, 'the sweep moved nothing (another sweep moved it first)', undefined, hash);
      return { success: true, transaction: hash, network: network as `${string}:${string}`, amount: swept.amount.toString() };
    } catch {
      return failure(network, Reason.settlementPending, 'sweep sent; outcome not known yet', undefined, hash);
    }
  }

  // ---- refunds the receiver side signed ----

  async #settleRefund(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
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
    return this.#exclusive(key, payload, requirements, async () => {
      const call = { payloadHash: payloadHash(key, requirements, payload.payload), paymentId: null };
      const existing = await this.ports.ledger.find(key);
      if (existing) return this.#refundAnswer(await this.ports.resume(existing, call), channelId);
      const state = await chainReads(() => readChannel(this.ports.client, channelId));
      if (state.refundNonce !== BigInt(refund.refundNonce)) return failure(network, Err.refundPayload, `the channel's refund nonce is ${state.refundNonce}, not ${refund.refundNonce}: sign the refund again`, config.payer);
      const claimedAfter = refund.claims.reduce((max, c) => (channelIdOf(c.voucher.channel, network).toLowerCase() === channelId.toLowerCase() && BigInt(c.totalClaimed) > max ? BigInt(c.totalClaimed) : max), state.totalClaimed);
      if (claimedAfter >= state.balance || BigInt(refund.amount) === 0n) return failure(network, Err.refundNoBalance, 'nothing is left to refund in this channel', config.payer);
      // The contract checks the receiverAuthorizer's refund (and claim) signatures and the vouchers; the estimate under
      // the ceiling is the simulation that refuses a bad one before anything is sent. Code that would run at our gas
      // in those checks is refused first.
      const withCode = [config.receiverAuthorizer, ...refund.claims.filter((c) => c.voucher.channel.payerAuthorizer === ZERO_ADDRESS).map((c) => c.voucher.channel.payer)];
      for (const address of withCode) {
        if (await this.#refusedForCode(address)) return failure(network, Reason.payerHasCode, `${getAddress(address)} has code: its signature check would run at our gas`, config.payer);
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
      if (claim.kind !== 'claimed') return claim.kind === 'exists' ? this.#refundAnswer(await this.ports.resume(claim.row, call), channelId) : idConflict(network, key.payer);
      return this.#refundAnswer(await this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked }), channelId);
    });
  }

  /** A refund's success names what it really moved (the contract caps it) and the channel after it. */
  async #refundAnswer(response: SettleResponse, channelId: Hex): Promise<SettleResponse> {
    if (!response.success || !response.transaction) return response;
    const receipt = await this.ports.client.getTransactionReceipt({ hash: response.transaction as Hash }).catch(() => null);
    const refunded = receipt ? judgeRefundReceipt(receipt, channelId) : null;
    return this.#withChannel({ ...response, ...(refunded?.amount !== undefined ? { amount: refunded.amount.toString() } : {}) }, channelId);
  }

  /** One settle per key in this process at a time (others join it, then answer from the row). */
  async #exclusive(key: SettlementKey, payload: PaymentPayload, requirements: PaymentRequirements, run: () => Promise<SettleResponse>): Promise<SettleResponse> {
    const id = keyString(key);
    const running = this.ports.inflight.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.settle(payload, requirements);
    }
    const settling = run();
    this.ports.inflight.set(id, settling);
    try {
      return await settling;
    } finally {
      this.ports.inflight.delete(id);
    }
  }
}

/** refundWithSignature, after the claims it needs when there are any (the contract's own multicall: one transaction). */
function refundCallData(refund: ReturnType<typeof refundSchema.parse>): Hex {
  const refundCall = encodeFunctionData({
    abi: batchAbi,
    functionName: 'refundWithSignature',
    args: [contractConfig(refund.channelConfig), BigInt(refund.amount), BigInt(refund.refundNonce), refund.refundAuthorizerSignature as Hex],
  });
  if (refund.claims.length === 0) return refundCall;
  const claimCall = encodeFunctionData({ abi: batchAbi, functionName: 'claimWithSignature', args: [contractClaims(refund.claims), refund.claimAuthorizerSignature as Hex] });
  return encodeFunctionData({ abi: batchAbi, functionName: 'multicall', args: [[claimCall, refundCall]] });
}

function payloadHash(key: SettlementKey, requirements: PaymentRequirements, payload: unknown): string {
  return keccak256(toBytes(JSON.stringify([keyString(key), getAddress(requirements.payTo), requirements.amount, payload])));
}

const claimSuccess = (network: string, transaction: Hash): SettleResponse => ({ success: true, transaction, network: network as `${string}:${string}`, amount: '' });
