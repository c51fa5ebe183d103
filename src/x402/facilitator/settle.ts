// The settle of an `exact` EIP-3009 payment, from the request to its claim: the request's checks, the
// payment-identifier (its retry resumes its own payload's row, another payload is a conflict), one settle per
// authorization in this process (others join it), the verify questions (verify.ts) so only a payment the payer
// really signed gets a row, then the gas float and budgets and the ledger claim, the last step before anything is
// sent (execute.ts sends). An authorization the token says is used and we never settled is a front-run: recorded
// and answered once when that transaction moved exactly this payment, without sending anything.
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { getAddress, type Hash, type PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { BlockClock } from '../../chain/block-clock.js';
import { transferWithAuthorizationTypes } from '../../chain/eip3009.js';
import { ChainUnavailableError, isTransportError } from '../../chain/errors.js';
import { crashPoint } from '../../platform/crash-points.js';
import type { Caller } from '../../platform/request-context.js';
import type { Eip3009Payload } from '../payload.js';
import type { SettlementRow } from '../tables.js';
import { failure, idConflict, settledBy } from './answers.js';
import type { ExecuteOptions, SettleRequest } from './execute.js';
import type { GasFloat } from './gas-float.js';
import { keyString, type SettlementKey, type SettlementLedger } from './ledger.js';
import { paymentIdOf } from './payment-id.js';
import { payloadHashOf, precheck } from './precheck.js';
import { Reason } from './reasons.js';
import type { SettlePolicy } from './settle-policy.js';
import type { ExactVerifier } from './verify.js';
import { settlementVerdict } from './verdicts.js';

// A front-run is found by its AuthorizationUsed log this far back (Robinhood Chain: ~40 min of blocks).
const FRONT_RUN_LOOKBACK_BLOCKS = 10_000n;

/** What the facilitator lends the settle: its parts, and the steps after a claim (the same for every kind). */
export interface SettlePorts {
  network: string;
  chainId: number;
  client: PublicClient;
  ledger: SettlementLedger;
  blockTime: BlockClock;
  log: Logger;
  policy: SettlePolicy | null;
  gasFloat: GasFloat;
  verifier: ExactVerifier;
  /** Settles of one key in this process join the running one. */
  inflight: Map<string, Promise<SettleResponse>>;
  resume(row: SettlementRow, call: { payloadHash: string; paymentId: string | null }): Promise<SettleResponse>;
  execute(row: SettlementRow, payload: PaymentPayload, requirements: PaymentRequirements, options: ExecuteOptions): Promise<SettleResponse>;
  finishOwned(row: SettlementRow, response: SettleResponse, transferLogIndex?: number): Promise<SettleResponse>;
}

/** One settle call: the authorization, which payload it is, and the payment-identifier it carries. */
interface SettleCall {
  key: SettlementKey;
  payloadHash: string;
  paymentId: string | null;
  eip3009: Eip3009Payload;
  /** Stored with the claim, so a takeover can execute it after this call's node died. */
  request: SettleRequest;
}

export class ExactSettler {
  constructor(private readonly ports: SettlePorts) {}

  async settle(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<SettleResponse> {
    const { ledger, verifier, inflight } = this.ports;
    const pre = precheck(this.ports.network, payload, requirements);
    if (!pre.ok) return failure(requirements.network, pre.reason, pre.message, pre.payer);
    const refused = this.ports.policy?.terms(pre.key.payer, requirements);
    if (refused) return failure(requirements.network, refused.reason, refused.message, pre.key.payer);
    const paymentId = paymentIdOf(payload);
    if (!paymentId.ok) return failure(requirements.network, Reason.invalidPayload, paymentId.message, pre.key.payer);
    // Out of its time window by the chain's clock: refused, unless we hold its row (retries and copies are answered from it).
    const outOfBounds = await verifier.timeBounds(pre.eip3009, requirements);
    if (outOfBounds && !(await ledger.find(pre.key))) return failure(requirements.network, outOfBounds.reason, outOfBounds.message, pre.key.payer);
    const id = keyString(pre.key);
    const running = inflight.get(id);
    if (running) {
      await running.catch(() => undefined);
      return this.settle(payload, requirements, caller);
    }
    const call: SettleCall = {
      key: pre.key,
      payloadHash: payloadHashOf(pre.key, requirements, pre.eip3009),
      paymentId: paymentId.id,
      eip3009: pre.eip3009,
      request: { payload, requirements },
    };
    const settling = this.#settleKey(call, payload, requirements, caller);
    inflight.set(id, settling);
    try {
      return await settling;
    } finally {
      inflight.delete(id);
    }
  }

  async #settleKey(call: SettleCall, payload: PaymentPayload, requirements: PaymentRequirements, caller: Caller | undefined): Promise<SettleResponse> {
    const { ledger, verifier } = this.ports;
    const { key } = call;
    // A payment-identifier names one payload: its retry resumes that payload's row, another payload is a conflict.
    if (call.paymentId) {
      const named = await ledger.findByPaymentId(key.payer, call.paymentId);
      if (named && (keyString(named) !== keyString(key) || named.payloadHash !== call.payloadHash)) return idConflict(requirements.network, key.payer);
      if (named) return this.ports.resume(named, call);
    }
    // Only a payment the payer really signed gets a row: a forged payload must not block the real one. A
    // payer with code never takes the quick path (its signature check runs its code, at our gas).
    const [quick, withCode] = await Promise.all([verifier.quick(payload, requirements, call.eip3009), verifier.payerHasCode(getAddress(key.payer))]);
    const simulated = quick === 'valid' && !withCode;
    if (!simulated) {
      const existing = await ledger.find(key);
      if (existing) return this.ports.resume(existing, call);
      if (quick === 'used') return this.#settleUsed(call, requirements);
      const verdict = withCode ? await verifier.verifyContractPayer(key, payload, requirements, call.eip3009) : await verifier.schemeVerify(key, payload, requirements);
      if (!verdict.isValid) {
        return failure(requirements.network, verdict.invalidReason ?? Reason.invalidPayload, verdict.invalidMessage ?? 'invalid payment', verdict.payer ?? key.payer);
      }
    }
    // A new claim is about to spend gas: the float and the budgets decide first (both throw: nothing sent).
    await this.ports.gasFloat.require('own');
    await this.ports.policy?.charge(key.payer, requirements.payTo);
    const fromBlock = await this.ports.client.getBlockNumber({ cacheTime: 2_000 }).catch(() => 0n);
    const asked = performance.now();
    const claim = await this.#claim(call, requirements, fromBlock - 5n);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
    crashPoint('settle.after-claim');
    return this.ports.execute(claim.row, payload, requirements, { claimAskedAt: asked, simulated, route: caller?.route, eip3009: call.eip3009 });
  }

  #claim(call: SettleCall, requirements: PaymentRequirements, fromBlock: bigint) {
    return this.ports.ledger.claim({
      ...call.key,
      payTo: getAddress(requirements.payTo),
      amount: requirements.amount,
      validBefore: call.eip3009.authorization.validBefore,
      signature: call.eip3009.signature,
      payloadHash: call.payloadHash,
      paymentId: call.paymentId,
      claimToken: crypto.randomUUID(),
      fromBlock: Number(fromBlock > 0n ? fromBlock : 0n),
      request: call.request,
    });
  }

  /**
   * The token says the authorization is used and we never settled it: someone else's transaction
   * executed it (a front-run between verify and settle). If that transaction moved exactly this
   * payment to payTo, the payment is made: we record it and answer its one success. Nothing is sent.
   */
  async #settleUsed(call: SettleCall, requirements: PaymentRequirements): Promise<SettleResponse> {
    const { ledger } = this.ports;
    const { key, eip3009 } = call;
    const used = () => failure(requirements.network, Reason.nonceAlreadyUsed, 'the authorization is already used or canceled', key.payer);
    const auth = eip3009.authorization;
    if (getAddress(auth.to) !== getAddress(requirements.payTo) || BigInt(auth.value) !== BigInt(requirements.amount)) return used();
    // Only the payer's own signature over these terms may claim the execution (not a forged copy of its nonce).
    if (!(await this.#signedByPayer(eip3009, requirements))) return used();
    const latest = await this.ports.client.getBlockNumber({ cacheTime: 2_000 });
    const claim = await this.#claim(call, requirements, latest - FRONT_RUN_LOOKBACK_BLOCKS);
    if (claim.kind === 'id_conflict') return idConflict(requirements.network, key.payer);
    if (claim.kind === 'exists') return this.ports.resume(claim.row, call);
    let verdict: Awaited<ReturnType<typeof settlementVerdict>>;
    try {
      verdict = await settlementVerdict(this.ports.client, claim.row, this.ports.blockTime);
    } catch (error) {
      await ledger.release(key, claim.row.claimToken);
      throw isTransportError(error) ? new ChainUnavailableError(error) : error;
    }
    if (verdict.kind !== 'settled') {
      await ledger.release(key, claim.row.claimToken);
      return used();
    }
    this.ports.log.info({ nonce: key.nonce, payer: key.payer, tx: verdict.txHash }, 'authorization executed by another transaction; recorded as settled');
    return this.ports.finishOwned(claim.row, settledBy(claim.row, verdict.txHash), verdict.logIndex);
  }

  async #signedByPayer(eip3009: Eip3009Payload, requirements: PaymentRequirements): Promise<boolean> {
    const extra = requirements.extra as { name?: unknown; version?: unknown };
    if (typeof extra.name !== 'string' || typeof extra.version !== 'string') return false;
    const auth = eip3009.authorization;
    try {
      return await this.ports.client.verifyTypedData({
        address: getAddress(auth.from),
        domain: { name: extra.name, version: extra.version, chainId: this.ports.chainId, verifyingContract: getAddress(requirements.asset) },
        types: transferWithAuthorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: {
          from: getAddress(auth.from),
          to: getAddress(auth.to),
          value: BigInt(auth.value),
          validAfter: BigInt(auth.validAfter),
          validBefore: BigInt(auth.validBefore),
          nonce: auth.nonce as Hash,
        },
        signature: eip3009.signature as Hash,
      });
    } catch (error) {
      if (isTransportError(error)) throw new ChainUnavailableError(error);
      return false;
    }
  }
}
