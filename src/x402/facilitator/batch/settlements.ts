// batch-settlement through our facilitator (x402BatchSettlement, @x402/evm 2.27), with the guarantees of every
// other path: the settle policy (minimum amount, payer ≠ payee, budgets), the gas float, payers with code refused,
// a gas ceiling decided by an estimate before each send, the ledger (one success per deposit authorization and per
// voucher increment, crash-safe, reconciled from the chain) and judgment by each operation's own event.
//
// What the facilitator is asked to do, and how:
// - verify a deposit, a voucher or a refund: the SDK's checks (channel config, signatures, balance, the cumulative
//   amount never below what the chain has claimed) after ours (terms, payers with code);
// - settle a deposit: one ERC-3009 authorization, executed through the canonical collector. It takes the shared
//   single-row path (execute.ts): claim, send, judge by its AuthorizationUsed + Transfer pair, answer once;
// - settle a claim: one transaction for many voucher increments, one ledger row per increment. A claim that names
//   an increment the chain already holds (a replayed voucher, a cumulative amount that went backwards) or more
//   than the channel holds (a channel drained by a withdrawal) is refused before anything is sent: on chain the
//   first is a silent no-op that would still cost our gas, the second a revert;
// - settle a sweep (`settle(receiver, token)`): moves what was claimed; paid only where its Settled event says so;
// - settle a refund the receiver side signed: keyed by the channel's refund nonce, the contract's own counter.
//
// This facilitator advertises no receiverAuthorizer: it never signs claims or refunds for a seller. Anyone can call
// /settle, and a facilitator that signed refunds on request would let a payer refund its unclaimed vouchers'
//
// This file is the engine's door (which operation a payload is, the request's rules, the verify) and the send of a
// claimed deposit or refund row; each operation is its own file: deposits.ts, claims.ts, sweeps.ts, refunds.ts.
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { isAddress, type Hash, type Hex } from 'viem';
import { findAsset } from '../../../chain/registry.js';
import { BATCH_SETTLEMENT } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { failure, invalid } from '../answers.js';
import type { Refusal } from '../bounds.js';
import { ownWords, Reason } from '../reasons.js';
import { BatchClaims } from './claims.js';
import { BatchDeposits, depositCallData } from './deposits.js';
import { depositSchema, refundSchema, ZERO_ADDRESS, type ChannelConfig } from './payload.js';
import { BatchRefunds, refundCallData } from './refunds.js';
import { Err, refusedForCode, type BatchPorts } from './shared.js';
import { BatchSweeps } from './sweeps.js';
import type { Caller } from '../../../platform/request-context.js';

export const BATCH_SCHEME = 'batch-settlement';

export class BatchSettlements {
  readonly #deposits: BatchDeposits;
  readonly #claims: BatchClaims;
  readonly #sweeps: BatchSweeps;
  readonly #refunds: BatchRefunds;

  constructor(private readonly ports: BatchPorts) {
    // Deposits and refunds call back into this engine: a deposit is verified whole, a join re-enters settle.
    const engine = {
      verify: (payload: PaymentPayload, requirements: PaymentRequirements) => this.verify(payload, requirements),
      settle: (payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller) => this.settle(payload, requirements, caller),
    };
    this.#deposits = new BatchDeposits(ports, engine);
    this.#claims = new BatchClaims(ports);
    this.#sweeps = new BatchSweeps(ports);
    this.#refunds = new BatchRefunds(ports, engine);
  }

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
      if (await refusedForCode(this.ports, config.payer)) return invalid(Reason.payerHasCode, ownWords(Reason.payerHasCode), config.payer);
    } else if (type === 'voucher' || type === 'refund') {
      const config = (payload.payload as { channelConfig?: ChannelConfig }).channelConfig;
      // A voucher signed by a payer with code is checked on chain by that code, at our gas (each claim).
      if (config && isAddress(config.payer) && config.payerAuthorizer === ZERO_ADDRESS && (await refusedForCode(this.ports, config.payer))) {
        return invalid(Reason.payerHasCode, ownWords(Reason.payerHasCode), config.payer);
      }
    } else {
      return invalid(Err.payloadType, 'only deposit, voucher and refund payloads are verified; claim and settle are the receiver side’s, sent to /settle');
    }
    const verdict = await this.ports.sdkVerify(payload, requirements);
    return verdict.isValid ? verdict : { ...verdict, invalidMessage: ownWords(verdict.invalidReason) };
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    const refused = this.#request(payload, requirements);
    if (refused) return failure(requirements.network, refused.reason, refused.message);
    switch ((payload.payload as { type?: unknown }).type) {
      case 'deposit':
        return this.#deposits.settle(payload, requirements, caller);
      case 'claim':
        return this.#claims.settle(payload, requirements);
      case 'settle':
        return this.#sweeps.settle(payload, requirements);
      case 'refund':
        return this.#refunds.settle(payload, requirements, caller);
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

  /**
   * The send of a claimed deposit or refund row (execute.ts's execute() calls it inside the settle's call
   * context, so the hash reaches the ledger the moment it leaves): alone, estimated under this scheme's ceiling.
   */
  async send(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const network = requirements.network;
    let data: Hex;
    let ceiling = this.ports.maxGas;
    if (row.kind === 'batch-deposit') {
      data = depositCallData(payload);
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
}
