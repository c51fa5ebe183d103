// Verify and settle for Permit2 payments (`exact` over Permit2, `upto`) with the guarantees of the EIP-3009 path:
// the same ledger row machinery (one claim per permit, one `success: true` ever, crash takeover, reconciliation
// from the chain), the same settle policy, gas float and budgets, payers with code refused, and a gas ceiling of
// its own (a Permit2 settle runs the proxy, Permit2's signature check and nonce bitmap, then the token: more than
// an EIP-3009 transfer, so FACILITATOR_MAX_PERMIT2_SETTLE_GAS). What is Permit2's: the request checks
// (payment.ts), the judgment of the chain (chain.ts) and the send below; everything after the claim is the
// facilitator's own execute (execute.ts) and resume (answering.ts), reached through the ports.
//
// Order of the checks, cheapest first, so a refusal costs nothing it need not: the request alone (parse, policy
// terms, payment-identifier), the chain's time, our own ledger (a retry or copy is answered from its row), then
// chain reads (payer's code, the nonce's bit) and the SDK's verify (signature, simulation), and only then the
// float, the budgets and the claim: the last step before anything is sent.
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { permit2WitnessTypes, uptoPermit2WitnessTypes } from '@x402/evm';
import { getAddress, type Address, type Hash } from 'viem';
import { ChainUnavailableError, isTransportError } from '../../../chain/errors.js';
import { PERMIT2_ADDRESS } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { chainReads, failure, idConflict, invalid, settledBy } from '../answers.js';
import { VALID_BEFORE_MARGIN_SECONDS, VALID_BEFORE_SKEW_SECONDS, type Refusal } from '../bounds.js';
import type { EnginePorts } from '../engine-ports.js';
import { GasCeilingError, gasWithin } from '../gas-ceiling.js';
import { keyString, type SettlementKey } from '../ledger.js';
import { paymentIdOf } from '../payment-id.js';
import type { Caller } from '../../../platform/request-context.js';
import { ownWords, Reason } from '../reasons.js';
import { settlementVerdict } from '../verdicts.js';
import { PERMIT2_NONCE_USED, permit2NonceUsed } from './chain.js';
import { isPermit2, parsePermit2, permit2PayloadHash, proxyOf, settleCallData, type Permit2Payment } from './payment.js';

/** What the facilitator lends this engine (engine-ports.ts), with the relayers' addresses (a front-run is told by its sender). */
export interface Permit2Ports extends EnginePorts {
  /** FACILITATOR_MAX_PERMIT2_SETTLE_GAS. */
  maxGas: bigint;
  relayers: () => Address[];
}

// A front-run is looked for this far back (as for EIP-3009 authorizations).
const FRONT_RUN_LOOKBACK_BLOCKS = 10_000n;

export class Permit2Payments {
  constructor(private readonly ports: Permit2Ports) {}

  /** Whether this engine takes the payload (a Permit2 one; `upto` payloads are never anything else). */
  handles(payload: PaymentPayload, requirements: PaymentRequirements): boolean {
    return isPermit2(payload) || requirements.scheme === 'upto';
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const parsed = parsePermit2(this.ports.network, payload, requirements);
    if (!parsed.ok) return invalid(parsed.reason, parsed.message, parsed.payer);
    const { payment, key } = parsed;
    const refused = this.ports.policy?.terms(payment.payer, requirements);
    if (refused) return invalid(refused.reason, refused.message, payment.payer);
    const outOfBounds = await this.#timeBounds(payment, requirements);
    if (outOfBounds) return invalid(outOfBounds.reason, outOfBounds.message, payment.payer);
    if (this.ports.inflight.has(keyString(key))) return invalid(PERMIT2_NONCE_USED, 'the permit is already being settled', payment.payer);
    return this.#chainChecks(payload, requirements, payment);
  }

  /**
   * What the chain decides, after the request checks: the payer's code (refused, or settled under the ceiling),
   * the nonce's bit (Permit2 would revert; named instead of a failed simulation), then the SDK's verify.
   */
  async #chainChecks(payload: PaymentPayload, requirements: PaymentRequirements, payment: Permit2Payment): Promise<VerifyResponse> {
    if (payment.kind === 'permit2-upto' && !this.ports.relayers().some((a) => a === payment.facilitator)) {
      return invalid('upto_facilitator_mismatch', 'the permit names another facilitator: only that key may settle it', payment.payer);
    }
    const [withCode, used] = await chainReads(() => Promise.all([this.ports.payerCode.hasCode(payment.payer), permit2NonceUsed(this.ports.client, payment.payer, payment.nonce)]));
    if (used) return invalid(PERMIT2_NONCE_USED, 'the permit nonce is already used or invalidated', payment.payer);
    if (withCode && this.ports.contractPayers === 'refuse') return invalid(Reason.payerHasCode, ownWords(Reason.payerHasCode), payment.payer);
    // The SDK verifies what it can of a permit to settle: upto against the permitted amount (its settle amount
    // is checked against the ceiling above).
    const verdict = await this.ports.sdkVerify(payload, payment.kind === 'permit2-upto' ? { ...requirements, amount: payment.permitted.toString() } : requirements);
    if (!verdict.isValid) return invalid(verdict.invalidReason ?? Reason.invalidPayload, ownWords(verdict.invalidReason), payment.payer);
    if (withCode) {
      // A payer with code checks the permit's signature with its own code, at our gas: only under the ceiling.
      try {
        await gasWithin(this.ports.client, { account: payment.facilitator ?? this.ports.relayers()[0]!, to: payment.proxy, data: settleCallData(payment) }, this.ports.maxGas);
      } catch (error) {
        if (isTransportError(error)) throw new ChainUnavailableError(error);
        const reason = error instanceof GasCeilingError ? Reason.gasOverCeiling : 'permit2_simulation_failed';
        return invalid(reason, ownWords(reason), payment.payer);
      }
    }
    return { isValid: true, payer: payment.payer };
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    const parsed = parsePermit2(this.ports.network, payload, requirements);
    if (!parsed.ok) return failure(requirements.network, parsed.reason, parsed.message, parsed.payer);
    const { payment, key } = parsed;
    const refused = this.ports.policy?.terms(payment.payer, requirements);
    if (refused) return failure(requirements.network, refused.reason, refused.message, payment.payer);
    const paymentId = paymentIdOf(payload);
    if (!paymentId.ok) return failure(requirements.network, Reason.invalidPayload, paymentId.message, payment.payer);
    // Out of its window by the chain's clock: refused, unless we hold its row (retries and copies are answered from it).
    const outOfBounds = await this.#timeBounds(payment, requirements);
    if (outOfBounds && !(await this.ports.ledger.find(key))) return failure(requirements.network, outOfBounds.reason, outOfBounds.message, payment.payer);
    const id = keyString(key);
    const running = this.ports.inflight.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.settle(payload, requirements, caller);
    }
    const settling = this.#settleKey(payload, requirements, payment, key, paymentId.id, caller);
    this.ports.inflight.set(id, settling);
    try {
      return await settling;
    } finally {
      this.ports.inflight.delete(id);
    }
  }

  async #settleKey(payload: PaymentPayload, requirements: PaymentRequirements, payment: Permit2Payment, key: SettlementKey, paymentId: string | null, caller: Caller | undefined): Promise<SettleResponse> {
    const { ledger } = this.ports;
    const call = { payloadHash: permit2PayloadHash(key, requirements, payment), paymentId };
    if (paymentId) {
      const named = await ledger.findByPaymentId(key.payer, paymentId);
      if (named && (keyString(named) !== keyString(key) || named.payloadHash !== call.payloadHash)) return idConflict(requirements.network, key.payer);
      if (named) return this.ports.resume(named, call);
    }
    const existing = await ledger.find(key);
    if (existing) return this.ports.resume(existing, call);
    const verdict = await this.#chainChecks(payload, requirements, payment);
    if (!verdict.isValid) {
      if (verdict.invalidReason === PERMIT2_NONCE_USED) return this.#settleUsed(payload, requirements, payment, key, call);
      return failure(requirements.network, verdict.invalidReason ?? Reason.invalidPayload, verdict.invalidMessage ?? 'invalid payment', payment.payer);
    }
    // upto with nothing to settle: the permit is closed here (our relayer is the only one that may execute it),
    // answered once, and nothing is sent.
    const sends = payment.amount > 0n;
    if (sends) {
      // A new claim is about to spend gas: the float and the budgets decide first (both throw: nothing sent).
      await this.ports.gasFloat.require('own');
      await this.ports.policy?.charge(key.payer, requirements.payTo);
    }
    const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
    const asked = performance.now();
    const claim = await this.#claim(key, requirements, payment, call, payload, fromBlock - 5n);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
    if (!sends) return this.ports.finishOwned(claim.row, { success: true, transaction: '', network: requirements.network, payer: payment.payer, amount: '0' });
    return this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked, route: caller?.route });
  }

  #claim(key: SettlementKey, requirements: PaymentRequirements, payment: Permit2Payment, call: { payloadHash: string; paymentId: string | null }, payload: PaymentPayload, fromBlock: bigint) {
    return this.ports.ledger.claim({
      ...key,
      kind: payment.kind,
      token: payment.token,
      payTo: getAddress(requirements.payTo),
      amount: payment.amount.toString(),
      validBefore: payment.deadline.toString(),
      signature: payment.signature,
      payloadHash: call.payloadHash,
      paymentId: call.paymentId,
      claimToken: crypto.randomUUID(),
      fromBlock: Number(fromBlock > 0n ? fromBlock : 0n),
      request: { payload, requirements },
    });
  }

  /**
   * The nonce is spent and we hold no row: someone executed the permit (a front-run between verify and settle), or
   * spent the nonce on something else. If the payer signed these terms and a direct proxy call executed exactly
   * them, that transaction is the payment: recorded and answered once. Nothing is sent.
   */
  async #settleUsed(payload: PaymentPayload, requirements: PaymentRequirements, payment: Permit2Payment, key: SettlementKey, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse> {
    const used = () => failure(requirements.network, PERMIT2_NONCE_USED, 'the permit nonce is already used or invalidated', payment.payer);
    if (!(await this.#signedByPayer(payment))) return used();
    const latest = await chainReads(() => this.ports.client.getBlockNumber({ cacheTime: 2_000 }));
    const claim = await this.#claim(key, requirements, payment, call, payload, latest - FRONT_RUN_LOOKBACK_BLOCKS);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
    const release = () => this.ports.ledger.release(key, claim.row.claimToken);
    let verdict: Awaited<ReturnType<typeof settlementVerdict>>;
    try {
      verdict = await settlementVerdict(this.ports.client, claim.row, this.ports.blockTime);
    } catch (error) {
      await release();
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
    if (verdict.kind !== 'settled') {
      await release();
      return used();
    }
    this.ports.log.info({ nonce: key.nonce, payer: key.payer, tx: verdict.txHash }, 'permit executed by another transaction; recorded as settled');
    return this.ports.finishOwned(claim.row, settledBy(claim.row, verdict.txHash), verdict.logIndex);
  }

  async #signedByPayer(p: Permit2Payment): Promise<boolean> {
    const permitted = { token: p.token, amount: p.permitted };
    const common = { permitted, spender: p.proxy, nonce: p.nonce, deadline: p.deadline };
    try {
      return await this.ports.client.verifyTypedData({
        address: p.payer,
        domain: { name: 'Permit2', chainId: this.ports.chainId, verifyingContract: PERMIT2_ADDRESS },
        primaryType: 'PermitWitnessTransferFrom',
        ...(p.kind === 'permit2-upto'
          ? { types: uptoPermit2WitnessTypes, message: { ...common, witness: { to: p.to, facilitator: p.facilitator!, validAfter: p.validAfter } } }
          : { types: permit2WitnessTypes, message: { ...common, witness: { to: p.to, validAfter: p.validAfter } } }),
        signature: p.signature,
      } as never);
    } catch (error) {
      if (isTransportError(error)) throw new ChainUnavailableError(error);
      return false;
    }
  }

  /**
   * The send of a claimed row (execute.ts's execute() calls it inside the settle's call context, so the hash
   * reaches the ledger the moment it leaves): alone (one permit per transaction: chain.ts's judgment relies on it),
   * from the named key for upto, under this scheme's ceiling. Answers as the SDK's settle would; execute() judges
   * the receipt by the payment's own pair either way.
   */
  async send(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const parsed = parsePermit2(this.ports.network, payload, requirements);
    if (!parsed.ok) return failure(requirements.network, parsed.reason, parsed.message, parsed.payer);
    const payment = parsed.payment;
    const network = requirements.network;
    let hash: Hash;
    try {
      hash = await this.ports.signer.sendSettlement({
        to: proxyOf(payment.kind),
        data: settleCallData(payment),
        payer: payment.payer,
        alone: true,
        from: payment.facilitator,
        ceiling: this.ports.maxGas,
      });
    } catch {
      // execute() tells apart what this was from the call context (over the ceiling, taken over, nothing sent).
      return failure(network, this.#revertReason(row), 'settlement transaction not sent', payment.payer);
    }
    let receipt: { status: string };
    try {
      receipt = await this.ports.signer.waitForTransactionReceipt({ hash });
    } catch (error) {
      return failure(network, Reason.settlementPending, error instanceof Error ? error.message.split('\n')[0]! : 'receipt not seen yet', payment.payer, hash);
    }
    return receipt.status === 'success' ? { success: true, transaction: hash, network, payer: payment.payer } : failure(network, this.#revertReason(row), 'settlement transaction reverted', payment.payer, hash);
  }

  #revertReason(row: SettlementRow): string {
    return row.kind === 'permit2-upto' ? 'invalid_upto_evm_transaction_failed' : Reason.transactionFailed;
  }

  /** The permit's window at the chain's time: deadline as validBefore, the witness's validAfter. */
  async #timeBounds(p: Permit2Payment, requirements: PaymentRequirements): Promise<Refusal | null> {
    const now = await chainReads(() => this.ports.blockTime());
    if (p.validAfter > now) return { reason: 'permit2_not_yet_valid', message: `not valid yet: validAfter ${p.validAfter} is after the chain's time ${now}` };
    if (p.deadline < now + BigInt(VALID_BEFORE_MARGIN_SECONDS)) {
      return { reason: 'permit2_deadline_expired', message: `expired: deadline ${p.deadline} is not at least ${VALID_BEFORE_MARGIN_SECONDS} s after the chain's time ${now}` };
    }
    const latest = now + BigInt(requirements.maxTimeoutSeconds + VALID_BEFORE_SKEW_SECONDS);
    if (p.deadline > latest) {
      return { reason: 'permit2_deadline_expired', message: `deadline ${p.deadline} is too far ahead: at most the chain's time ${now} + maxTimeoutSeconds (${requirements.maxTimeoutSeconds}) + ${VALID_BEFORE_SKEW_SECONDS} s` };
    }
    return null;
  }
}
