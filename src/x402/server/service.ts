// ctx.x402: the resource-server side of x402 for every paid endpoint. Builds challenges, reads the
// payment header, verifies and settles through the configured facilitator, writes the answers.
// See /work/notes/x402-wiring.md for how endpoints use it.
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { deepEqual } from '@x402/core/utils';
import { appendPaymentIdentifierToExtensions, declarePaymentIdentifierExtension, generatePaymentId, PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { getAddress, type Hex } from 'viem';
import { judgePayment, paymentUseOf, type ExpectedPayment } from '../../chain/payment-check.js';
import type { AssetInfo } from '../../chain/registry.js';
import { ApiError } from '../../platform/http/errors.js';
import { callerOf, type Caller } from '../../platform/request-context.js';
import { PERMIT2_NONCE_USED } from '../facilitator/permit2/chain.js';
import { settleClaimant } from '../settlement-claimant.js';
import { FacilitatorUnavailableError, PaymentHeaderError, SettlementUnknownError } from './errors.js';
import { chargeOnce, type ChargeDeps } from './charge.js';
import type { CallerFacilitatorClient } from './facilitator-clients.js';
import { chargeUsage, type Usage, type UsageResult } from './metered.js';
import { encodeChallengeHeader, encodeSettlementHeader, PAYMENT_SIGNATURE, readPaymentHeader } from './headers.js';
import { stepsFor, type ChargeResult, type PaymentSteps, type PricedResource, type SettleOutcome, type VerifyOutcome } from './payment-steps.js';

export interface X402ServiceDeps {
  network: string;
  asset: AssetInfo;
  serviceName: string;
  /** Public base URL of the api origin (resolved per call: it is known once the listener is up). */
  apiBaseUrl: () => string;
  facilitator: () => CallerFacilitatorClient;
  /** Keyed hash (the server pepper): a record's payment-identifier must be one nobody else can compute. */
  keyedHash: (value: string) => string;
  /**
   * During a pepper rotation, the previous pepper's keyed hashes too (after the current one): a record named
   * before the switch keeps its transfer (docs/operations.md#key-rotation).
   */
  earlierKeyedHashes?: (value: string) => string[];
  /**
   * The payment records: charge()'s paid requests, and the chain and transfer claims with which a settle
   * named for a record makes sure its transfer is that record's. Without them the service verifies and
   * settles only (tests of the facilitator clients).
   */
  records?: ChargeDeps;
}

const PENDING = 'settlement_pending';
const NONCE_USED = 'invalid_exact_evm_nonce_already_used';
const DEFAULT_TIMEOUT_SECONDS = 300;

export class X402Service implements PaymentSteps {
  constructor(private readonly deps: X402ServiceDeps) {}

  get network(): string {
    return this.deps.network;
  }

  get asset(): AssetInfo {
    return this.deps.asset;
  }

  /** The facilitator client in use (local engine or HTTP), for callers that need raw access. */
  facilitator(): CallerFacilitatorClient {
    return this.deps.facilitator();
  }

  /** Absolute URL of this request on the public api origin (path and query kept). */
  resourceUrl(request: FastifyRequest): string {
    return `${this.deps.apiBaseUrl()}${request.url}`;
  }

  /** The single `accepts` entry for a resource: exact / our network / USDG with its EIP-712 domain. */
  requirements(resource: PricedResource): PaymentRequirements {
    const asset = resource.asset ?? this.deps.asset;
    return {
      scheme: 'exact',
      network: asset.network as `${string}:${string}`,
      asset: asset.address,
      amount: resource.amount,
      payTo: getAddress(resource.payTo),
      maxTimeoutSeconds: resource.maxTimeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
      extra: { name: asset.eip712.name, version: asset.eip712.version },
    };
  }

  /** The x402 payment-required object (body of the 402 and, base64, its PAYMENT-REQUIRED header). */
  paymentRequired(resource: PricedResource, error?: string): PaymentRequired {
    return {
      x402Version: 2,
      ...(error ? { error } : {}),
      resource: { url: resource.url, description: resource.description, mimeType: resource.mimeType, serviceName: this.deps.serviceName },
      accepts: [this.requirements(resource)],
    };
  }

  /** The request's payment (PAYMENT-SIGNATURE, else X-PAYMENT); null when none. Throws PaymentHeaderError. */
  readPayment(request: FastifyRequest): PaymentPayload | null {
    return readPaymentHeader(request.headers);
  }

  /** Decodes one PAYMENT-SIGNATURE / X-PAYMENT value. Throws PaymentHeaderError when malformed. */
  decodePayment(header: string): PaymentPayload {
    const payload = readPaymentHeader({ [PAYMENT_SIGNATURE]: header });
    if (!payload) throw new PaymentHeaderError('payment header is empty');
    return payload;
  }

  /** Header values: PAYMENT-REQUIRED for a challenge, PAYMENT-RESPONSE (= X-PAYMENT-RESPONSE) for a settlement. */
  encodePaymentRequired(paymentRequired: PaymentRequired): string {
    return encodeChallengeHeader(paymentRequired);
  }

  encodePaymentResponse(settlement: SettleResponse): string {
    return encodeSettlementHeader(settlement);
  }

  /**
   * The challenge entry the payment accepted, or null. Every field but `extra` must be equal, our
   * `extra` keys must be present, and a payload that names its resource must name this one.
   */
  match(paymentRequired: PaymentRequired, payload: PaymentPayload): PaymentRequirements | null {
    if (payload.x402Version !== 2) return null;
    if (payload.resource?.url !== undefined && payload.resource.url !== paymentRequired.resource.url) return null;
    const { extra: acceptedExtra = {}, ...accepted } = payload.accepted;
    for (const requirements of paymentRequired.accepts) {
      const { extra, ...core } = requirements;
      if (!deepEqual(core, { ...accepted, payTo: safeChecksum(accepted.payTo), asset: safeChecksum(accepted.asset) })) continue;
      if (Object.entries(extra ?? {}).every(([k, v]) => deepEqual(v, (acceptedExtra as Record<string, unknown>)[k]))) return requirements;
    }
    return null;
  }

  /** Facilitator verify, as an outcome: valid / invalid (with the facilitator's reason) / unavailable. `caller`: the request it is for. */
  async verify(payload: PaymentPayload, requirements: PaymentRequirements, caller?: Caller): Promise<VerifyOutcome> {
    try {
      const result = await this.deps.facilitator().verify(payload, requirements, caller);
      if (result.isValid) return { kind: 'valid', payer: result.payer ?? '', response: result };
      const reason = result.invalidReason ?? 'invalid_payment';
      return { kind: 'invalid', reason, message: result.invalidMessage ?? reason, response: result };
    } catch (error) {
      if (error instanceof FacilitatorUnavailableError) return { kind: 'unavailable', message: error.message };
      throw error;
    }
  }

  /**
   * Facilitator settle, as an outcome. The payload carries a payment-identifier of this call's own
   * (replacing any the client sent), so a retry of ours after a lost answer or `settlement_pending`
   * gets the first answer back, while any other settle of the same authorization is refused: a
   * `success: true` is this request's alone. Still pending, a lost answer or a 5xx after sending is
   * `unknown`: money may have moved, so record it and never charge again for this request. With a
   * facilitator that ignores the identifier, a retry is only trusted when it succeeds. `caller`: the request it is for.
   */
  async settle(paid: PaymentPayload, requirements: PaymentRequirements, record?: string, caller?: Caller): Promise<SettleOutcome> {
    const client = this.deps.facilitator();
    const payload = withOwnPaymentId(paid, record === undefined ? generatePaymentId('tg_') : this.paymentIdOf(record));
    let ownEarlierAttempt = false;
    let response: SettleResponse;
    try {
      try {
        response = await client.settle(payload, requirements, caller);
      } catch (error) {
        if (!(error instanceof SettlementUnknownError)) throw error;
        // Our own request may have settled it: ask again; that answer is not someone else's replay.
        ownEarlierAttempt = true;
        response = await client.settle(payload, requirements, caller);
      }
      if (!response.success && response.errorReason === PENDING) {
        ownEarlierAttempt = true;
        response = await client.settle(payload, requirements, caller);
      }
    } catch (error) {
      if (error instanceof FacilitatorUnavailableError) {
        // A retry after an unknown first answer cannot prove nothing happened.
        return ownEarlierAttempt ? { kind: 'unknown', transaction: null, message: error.message } : { kind: 'unavailable', message: error.message };
      }
      if (error instanceof SettlementUnknownError) return { kind: 'unknown', transaction: error.transaction || null, message: error.message };
      throw error;
    }
    if (!response.success && response.errorReason === PENDING) {
      return { kind: 'unknown', transaction: response.transaction || null, message: response.errorMessage ?? 'settlement pending' };
    }
    if (!response.success && (response.errorReason === NONCE_USED || response.errorReason === PERMIT2_NONCE_USED) && response.transaction && record !== undefined && this.deps.records) {
      // "Used, in this transaction": if that transaction paid exactly this authorization and its transfer is
      // free or already this record's, it is this record's payment (an answer our own settle lost to a
      // takeover or a crash, or a concurrent settle of the same record answered first); a transfer another
      // settle holds stays refused. A Permit2 permit is this record's only when our facilitator's success
      // claimed its transfer under the record's own name (#claimTransfer reads no Permit2 logs).
      if (await this.#claimTransfer(record, paid, requirements, response)) {
        const settled: SettleResponse = { success: true, transaction: response.transaction, network: requirements.network, payer: response.payer };
        return { kind: 'settled', transaction: response.transaction, payer: response.payer ?? '', response: settled };
      }
    }
    if (!response.success && ownEarlierAttempt) {
      // A refusal after our own unanswered attempt (e.g. "nonce already used" from a facilitator
      // without a settlement record) may be that attempt having gone through: not a definitive failure.
      const reason = response.errorReason ?? 'settlement_failed';
      return { kind: 'unknown', transaction: response.transaction || null, message: `retried settle answered ${reason}: ${response.errorMessage ?? reason}` };
    }
    if (!response.success) {
      const reason = response.errorReason ?? 'settlement_failed';
      return { kind: 'failed', reason, message: response.errorMessage ?? reason, response };
    }
    if (record !== undefined && this.deps.records && !(await this.#claimTransfer(record, paid, requirements, response))) {
      // Not provably this record's transfer (another facilitator's word, a receipt not readable yet, a transfer
      // something else holds): the reconciler decides it from the chain, under the same claim.
      return { kind: 'unknown', transaction: response.transaction, message: 'the settlement could not be confirmed as this payment’s own transfer yet' };
    }
    return { kind: 'settled', transaction: response.transaction, payer: response.payer ?? '', response };
  }

  /**
   * Claims the settled transfer for `record` (chain_payment_uses): what our facilitator's success already
   * claimed under the same name (then this is a read), and what a facilitator elsewhere never writes. So
   * one transfer serves one record whatever facilitator settled it.
   */
  async #claimTransfer(record: string, paid: PaymentPayload, requirements: PaymentRequirements, response: SettleResponse): Promise<boolean> {
    const { client, uses } = this.deps.records!;
    // Our own facilitator claimed it under this record's name when it answered: one read, no chain call.
    for (const id of this.#paymentIdsOf(record)) if (await uses.heldIn(this.deps.network, response.transaction, settleClaimant(id))) return true;
    const auth = (paid.payload as { authorization?: { from?: string; nonce?: string } }).authorization;
    if (!auth?.from || !auth.nonce) return false;
    const expected = { asset: requirements.asset, payer: auth.from, nonce: auth.nonce, payTo: requirements.payTo, amount: requirements.amount };
    try {
      const receipt = await client.getTransactionReceipt({ hash: response.transaction as Hex });
      const judgment = judgePayment(receipt, expected);
      return judgment.kind === 'paid' && (await this.claimPayment(record, expected, { transactionHash: response.transaction, logIndex: judgment.logIndex }));
    } catch {
      return false;
    }
  }

  /**
   * The payment-identifier every settle of `record` (e.g. `storage:order:<id>`) carries: the same on each
   * retry and after a restart, and secret (a keyed hash), so no copy of the payload can carry it.
   */
  paymentIdOf(record: string): string {
    return `tg_${this.deps.keyedHash(`x402-settle:${record}`).slice(0, 48)}`;
  }

  /**
   * Takes a transfer that paid `record` for it (chain_payment_uses), under the same name our facilitator's
   * success to that record's settle claims: true when it is (now or already) the record's, false when a copy
   * of the payload took the success first or something else holds it. Every grant from the chain calls this.
   */
  async claimPayment(record: string, expected: ExpectedPayment, paid: { transactionHash: string; logIndex: number }): Promise<boolean> {
    if (!this.deps.records) throw new Error('claimPayment() needs the payment records (X402ServiceDeps.records)');
    const use = paymentUseOf(this.deps.network, expected, paid.transactionHash, paid.logIndex);
    const [current, ...earlier] = this.#paymentIdsOf(record);
    if (await this.deps.records.uses.claim(use, settleClaimant(current!))) return true;
    if (earlier.length === 0) return false;
    // Held under the record's name from before a pepper rotation: still the record's own.
    const holder = await this.deps.records.uses.holder(use);
    return earlier.some((id) => holder === settleClaimant(id));
  }

  /** The record's payment-identifier, then (during a pepper rotation) what the previous pepper named it. */
  #paymentIdsOf(record: string): string[] {
    const earlier = this.deps.earlierKeyedHashes?.(`x402-settle:${record}`) ?? [];
    return [this.paymentIdOf(record), ...earlier.map((hash) => `tg_${hash.slice(0, 48)}`)];
  }

  /**
   * The whole x402 flow for a simple paid endpoint: challenge when unpaid, verify, settle, each payment
   * recorded so it buys one response and its retry gets the same result (charge.ts).
   * Throws ApiError 400 `invalid_payment_header`, 503 `facilitator_unavailable`,
   * 503 `settlement_result_unknown`.
   */
  async charge(request: FastifyRequest, resource: PricedResource): Promise<ChargeResult> {
    if (!this.deps.records) throw new Error('charge() needs the payment records (X402ServiceDeps.records)');
    try {
      return await chargeOnce(stepsFor(this, callerOf(request)), this.deps.records, request, resource);
    } catch (error) {
      throw toApiError(error);
    }
  }

  /**
   * The same for a metered endpoint: an `upto` challenge (Permit2, at most `resource.amount`), settled for what
   * `use` says the request used (metered.ts). Throws as charge() does.
   */
  async chargeUsage(request: FastifyRequest, resource: PricedResource, use: Usage): Promise<UsageResult> {
    if (!this.deps.records) throw new Error('chargeUsage() needs the payment records (X402ServiceDeps.records)');
    try {
      return await chargeUsage(stepsFor(this, callerOf(request)), this.deps.records, request, resource, use);
    } catch (error) {
      throw toApiError(error);
    }
  }

  /** 402 with the challenge as body and base64 PAYMENT-REQUIRED header; a failed settlement adds PAYMENT-RESPONSE. */
  sendPaymentRequired(reply: FastifyReply, paymentRequired: PaymentRequired, settlement?: SettleResponse): FastifyReply {
    reply.code(402).header('payment-required', encodeChallengeHeader(paymentRequired)).header('cache-control', 'no-store');
    if (settlement) this.writePaymentResponse(reply, settlement);
    return reply.send(paymentRequired);
  }

  /** PAYMENT-RESPONSE, its legacy alias X-PAYMENT-RESPONSE, and Cache-Control: no-store. */
  writePaymentResponse(reply: FastifyReply, settlement: SettleResponse): void {
    const encoded = encodeSettlementHeader(settlement);
    reply.header('payment-response', encoded).header('x-payment-response', encoded).header('cache-control', 'no-store');
  }
}

/** The standard HTTP answer for the wiring's typed errors (others pass through unchanged). */
export function toApiError(error: unknown): unknown {
  if (error instanceof PaymentHeaderError) return new ApiError(400, 'invalid_payment_header', error.message);
  if (error instanceof FacilitatorUnavailableError) {
    return new ApiError(503, 'facilitator_unavailable', 'Payment verification or settlement is temporarily unavailable', undefined, { 'retry-after': '5' });
  }
  if (error instanceof SettlementUnknownError) {
    return new ApiError(503, 'settlement_result_unknown', 'The settlement outcome is being reconciled; do not pay again', error.transaction ? { transaction: error.transaction } : undefined, { 'retry-after': '10' });
  }
  return error;
}

/** The payload as this call sends it: the client's extensions, with the payment-identifier ours. */
function withOwnPaymentId(payload: PaymentPayload, id: string): PaymentPayload {
  const { [PAYMENT_IDENTIFIER]: _theirs, ...extensions } = payload.extensions ?? {};
  return { ...payload, extensions: appendPaymentIdentifierToExtensions({ ...extensions, [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) }, id) };
}

function safeChecksum(address: string): string {
  try {
    return getAddress(address);
  } catch {
    return address;
  }
}
