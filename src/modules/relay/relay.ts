import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import type { Hex } from 'viem';
import { transferWithAuthorizationTypes } from '../../chain/eip3009.js';
import { isTransportError } from '../../chain/errors.js';
import { authorizationOutcome, type ExpectedPayment } from '../../chain/payment-check.js';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { ApiError } from '../../platform/http/errors.js';
import { newId } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import { GasFloatLowError } from '../../x402/facilitator/gas-float.js';
import { Reason } from '../../x402/facilitator/reasons.js';
import { parseRelayBody, relayReceipt, type RelayAsset, type RelayPayment } from './credential.js';
import { relayErrors } from './errors.js';
import type { BroadcastRow, RecordKey, RelayStore, StoredAnswer } from './store.js';

/** How far past now a credential may stay valid: the asset's `maxTimeoutSeconds` (+ a little clock skew). */
export const MAX_TIMEOUT_SECONDS = 300;
const SKEW_SECONDS = 30;
/** How long a repeat of an in-flight key waits for its first request before answering 503 (retry). */
const WAIT_FOR_FIRST_MS = 25_000;
const LOOKBACK_BLOCKS = 10_000n;
/** One payment of the broadcast: its name in that settle's payment-identifier and in chain_payment_uses. */
const settlementRecordOf = (recordId: string, nonce: string) => `relay:broadcast:${recordId}:${nonce.toLowerCase()}`;

export interface RelayOptions {
  retentionSeconds: number;
  /** Records one payer may hold at a time (in flight or kept); past it that payer's new keys are refused. */
  capacityPerPayer: number;
  /** An in-flight record untouched this long lost its request (the node died): a repeat takes it over. */
  takeoverAfterSeconds: number;
}

export type RelayAnswer = { status: number; body: unknown };

// The facilitator's verdicts in the relay table's words.
const VERDICTS: Record<string, { status: number; code: string }> = {
  [Reason.invalidSignature]: { status: 422, code: 'invalid_signature' },
  [Reason.nonceAlreadyUsed]: { status: 422, code: 'authorization_already_used' },
  [Reason.insufficientBalance]: { status: 422, code: 'insufficient_balance' },
  [Reason.recipientMismatch]: { status: 422, code: 'request_mismatch' },
  [Reason.valueMismatch]: { status: 422, code: 'request_mismatch' },
  [Reason.tokenNameMismatch]: { status: 422, code: 'unsupported_asset' },
  [Reason.tokenVersionMismatch]: { status: 422, code: 'unsupported_asset' },
  [Reason.networkMismatch]: { status: 422, code: 'unsupported_asset' },
};
const verdictOf = (reason: string, message: string) => {
  const known = VERDICTS[reason];
  // Expired, not yet valid, or refused by the token's simulation: the credential cannot be used as sent.
  return relayErrors.rejected(known?.status ?? 400, known?.code ?? 'invalid_credential', `${message} (${reason})`);
};

/**
 * The relay's two lifecycle operations over the payment core. A credential's EIP-3009 authorization is
 * verified and settled by the same facilitator engine (and relayer pool) as every x402 payment, so the
 * payment core's rules hold here too: one success per authorization, front-runs found from the logs.
 * Broadcast adds the idempotency record: created once per payer and key (the database decides), completed
 * only by its owner, and a repeat after an unknown outcome resolves it from the chain — never by a new
 * signature. Keys are the payer's own: another payer's credential under the same key is another record,
 * and nothing is written under a payer's name before the payer's signature is checked.
 */
export class RelayService {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: RelayStore,
    private readonly asset: RelayAsset,
    private readonly options: RelayOptions,
  ) {}

  /** `caller`: the request that asked (its id goes to the facilitator, its route labels the settle's gas). */
  async validate(body: unknown, caller?: Caller): Promise<RelayAnswer> {
    const payment = this.parse(body);
    await this.verify(payment, caller);
    return { status: 200, body: this.accepted(payment) };
  }

  async broadcast(keyHeader: string | null, body: unknown, caller?: Caller): Promise<RelayAnswer> {
    const idempotencyKey = checkedKey(keyHeader);
    const payment = this.parse(body);
    // Anyone can call the relay: below the public gas floor it stops before our own modules' settles do.
    await this.ctx.facilitator?.requireFloat('public').catch((error: unknown) => {
      throw error instanceof GasFloatLowError ? relayErrors.gasLow(error.message) : relayErrors.unavailable();
    });
    return this.attempt({ payer: payment.payer.toLowerCase(), idempotencyKey }, payment, caller);
  }

  /**
   * The payer's key seen before is a repeat. A new one is checked in this order: the signature first, since
   * the payer named in a credential is only a claim until then (a stranger naming someone else's address
   * could otherwise hold that payer's key, or count against its capacity, for as long as its own
   * verification takes); then the payer's capacity; then the one INSERT that decides which request is first.
   */
  private async attempt(key: RecordKey, payment: RelayPayment, caller: Caller | undefined): Promise<RelayAnswer> {
    const existing = await this.store.byKey(key);
    if (existing) return this.repeat(existing, payment, caller);
    await this.proveSigned(payment);
    // A guard against one payer's unbounded growth, not an exact quota: concurrent new keys may pass it together.
    const live = await this.store.liveOf(key.payer, this.options.capacityPerPayer);
    if (live.count >= this.options.capacityPerPayer) throw relayErrors.capacityExceeded(live.firstExpiresInSeconds);
    const owner = newId();
    const created = await this.store.create({ id: newId(), payer: key.payer, idempotencyKey: key.idempotencyKey, fingerprint: payment.fingerprint, nonce: payment.authorization.nonce.toLowerCase(), owner }, this.options.retentionSeconds);
    if (created === 'key_taken' || created === 'authorization_taken') {
      // Lost the race to create it: a concurrent request with this key is the first. (Two inserts of one
      // key and credential at once may trip either unique constraint first.)
      const first = await this.store.byKey(key);
      if (first) return this.repeat(first, payment, caller);
      if (created === 'key_taken') return this.attempt(key, payment, caller); // its record was discarded meanwhile
      // Another key holds this credential: it is relayed (and answered) under that key only.
      throw relayErrors.rejected(422, 'authorization_already_used', 'This credential is being relayed, or was, under another Idempotency-Key');
    }
    crashPoint('relay.after-record');
    return this.run(created, owner, payment, false, caller);
  }

  /** A key seen before: the same credential gets the same result (waiting for it if in flight); another is 409. */
  private async repeat(record: BroadcastRow, payment: RelayPayment, caller: Caller | undefined): Promise<RelayAnswer> {
    if (record.fingerprint !== payment.fingerprint) throw relayErrors.idempotencyConflict();
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (let current: BroadcastRow | undefined = record; current; current = await this.store.byKey(record)) {
      // The key's record may have been discarded and made again for another credential meanwhile.
      if (current.fingerprint !== payment.fingerprint) throw relayErrors.idempotencyConflict();
      if (current.status === 'completed') return stored(current);
      const owner = newId();
      if (await this.store.takeOver(current.id, this.options.takeoverAfterSeconds, owner)) return this.run(current, owner, payment, true, caller);
      if (Date.now() > deadline) throw relayErrors.inProgress();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Pruned or discarded meanwhile (its attempt changed nothing): this request is a first attempt again.
    return this.attempt(record, payment, caller);
  }

  /**
   * One attempt under the record. A resumed record (its earlier attempt's outcome is unknown: it may
   * have sent the transaction) asks the chain first: a used authorization is resolved from its
   * transaction, never settled again; and it is never discarded, since what that attempt did is not
   * known — a refusal leaves it for the next repeat to resolve.
   */
  private async run(record: BroadcastRow, owner: string, payment: RelayPayment, resumed: boolean, caller: Caller | undefined): Promise<RelayAnswer> {
    try {
      if (resumed) {
        const resolved = await this.resolveFromChain(record, payment);
        if (resolved) return await this.complete(record, owner, resolved);
      }
      await this.verify(payment, caller);
      return await this.settle(record, owner, payment, resumed, caller);
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) {
        if (!resumed) {
          // Refused before anything was submitted: nothing to remember, the key may be retried.
          await this.store.discard(record.id, owner);
          throw error;
        }
        await this.store.abandon(record.id, owner);
        throw relayErrors.outcomeUnknown();
      }
      throw error;
    }
  }

  private async settle(record: BroadcastRow, owner: string, payment: RelayPayment, resumed: boolean, caller: Caller | undefined): Promise<RelayAnswer> {
    const { payload, requirements } = this.x402Of(payment);
    const outcome = await this.ctx.x402.settle(payload, requirements, settlementRecordOf(record.id, payment.authorization.nonce), caller);
    crashPoint('relay.after-settle');
    switch (outcome.kind) {
      case 'settled':
        return this.complete(record, owner, { httpStatus: 200, answer: this.success(payment, outcome.transaction) });
      case 'failed': {
        // nonce_already_used is final here: the facilitator answers success once per authorization (a
        // front-run it has not answered for is a success already), so another payment path had it.
        const refused = verdictOf(outcome.reason, outcome.message);
        return this.complete(record, owner, { httpStatus: refused.status, answer: { success: false, accepted: false, error: { code: refused.code, message: refused.message } } });
      }
      case 'unavailable':
        // Nothing sent by this attempt; a resumed record's earlier attempt is still unaccounted for.
        if (resumed) await this.store.abandon(record.id, owner);
        else await this.store.discard(record.id, owner);
        throw relayErrors.unavailable();
      case 'unknown':
        // Money may have moved: keep the record, let the next repeat of the key take it over at once.
        await this.store.abandon(record.id, owner);
        throw relayErrors.outcomeUnknown();
    }
  }

  /**
   * The answer from the chain when this authorization was used by a transaction that pays this request,
   * and that transfer has bought nothing else (the record claims it, so a repeat finds it its own).
   */
  private async resolveFromChain(record: BroadcastRow, payment: RelayPayment): Promise<StoredAnswer | null> {
    const expected: ExpectedPayment = {
      asset: this.asset.address,
      payer: payment.payer,
      nonce: payment.authorization.nonce,
      payTo: payment.request.recipient,
      amount: payment.request.amount,
    };
    const outcome = await authorizationOutcome(this.ctx.chain.publicClient, expected, BigInt(payment.authorization.validBefore), LOOKBACK_BLOCKS, 0);
    if (outcome.kind !== 'paid') return null;
    if (!(await this.ctx.x402.claimPayment(settlementRecordOf(record.id, payment.authorization.nonce), expected, outcome))) return null;
    return { httpStatus: 200, answer: this.success(payment, outcome.transactionHash) };
  }

  private async complete(record: BroadcastRow, owner: string, answer: StoredAnswer): Promise<RelayAnswer> {
    if (await this.store.complete(record.id, owner, answer)) return { status: answer.httpStatus, body: answer.answer };
    // Taken over meanwhile: the record's own answer stands.
    const current = await this.store.byKey(record);
    if (current?.id === record.id && current.status === 'completed') return stored(current);
    throw relayErrors.inProgress();
  }

  /** The checks only the chain can answer, by the facilitator engine: signature, balance, nonce unused, time. */
  private async verify(payment: RelayPayment, caller: Caller | undefined): Promise<void> {
    // The chain's time, not this node's: the token judges validBefore by its blocks.
    const now = Number(await this.ctx.chain.blockTime().catch(() => {
      throw relayErrors.unavailable();
    }));
    if (Number(payment.authorization.validBefore) > now + MAX_TIMEOUT_SECONDS + SKEW_SECONDS) {
      throw relayErrors.rejected(400, 'invalid_credential', `The authorization stays valid for more than ${MAX_TIMEOUT_SECONDS} s (validBefore ${payment.authorization.validBefore})`);
    }
    const { payload, requirements } = this.x402Of(payment);
    const verdict = await this.ctx.x402.verify(payload, requirements, caller);
    if (verdict.kind === 'unavailable') throw relayErrors.unavailable();
    if (verdict.kind === 'invalid') throw verdictOf(verdict.reason, verdict.message);
  }

  /** The credential's authorization as the x402 exact payment the facilitator engine checks and settles. */
  private x402Of(payment: RelayPayment): { payload: PaymentPayload; requirements: PaymentRequirements } {
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: this.asset.network as `${string}:${string}`,
      asset: this.asset.address,
      amount: payment.request.amount,
      payTo: payment.request.recipient,
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra: { name: this.asset.name, version: this.asset.version },
    };
    return {
      requirements,
      payload: { x402Version: 2, accepted: requirements, payload: { signature: payment.signature, authorization: payment.authorization } },
    };
  }

  private accepted(payment: RelayPayment) {
    return {
      success: true,
      accepted: true,
      method: 'evm',
      intent: 'charge',
      source: payment.source ?? `did:pkh:${this.asset.network}:${payment.payer}`,
      details: {
        challengeId: payment.challengeId,
        network: this.asset.network,
        chainId: this.asset.chainId,
        currency: this.asset.address,
        symbol: this.asset.symbol,
        decimals: this.asset.decimals,
        amount: payment.request.amount,
        recipient: payment.request.recipient,
        payer: payment.payer,
      },
    };
  }

  private success(payment: RelayPayment, transaction: string) {
    return { success: true, receipt: relayReceipt({ challengeId: payment.challengeId, chainId: this.asset.chainId, reference: transaction.toLowerCase() as Hex, timestamp: this.ctx.clock.now().toISOString() }) };
  }

  private parse(body: unknown): RelayPayment {
    let parsed: ReturnType<typeof parseRelayBody>;
    try {
      parsed = parseRelayBody(body, this.asset);
    } catch (error) {
      // JSON decoded inside the credential (its base64url request) is past the body's guard: a hostile
      // one (e.g. nested thousands deep) is a bad credential, not our failure.
      if (error instanceof RangeError || error instanceof SyntaxError || error instanceof TypeError) {
        throw relayErrors.rejected(400, 'invalid_credential', 'The credential could not be decoded');
      }
      throw error;
    }
    if ('code' in parsed) throw relayErrors.rejected(parsed.status, parsed.code, parsed.message);
    return parsed;
  }

  /**
   * The credential is signed by its payer: ECDSA here (no RPC), else (a contract wallet, or a bad signature)
   * ERC-1271 on chain, as the facilitator engine judges it. Not a re-check of the engine's verdict: it runs
   * before any record exists, so that only the payer can create records under its address.
   */
  private async proveSigned(payment: RelayPayment): Promise<void> {
    const { authorization: a } = payment;
    let signed: boolean;
    try {
      signed = await this.ctx.chain.publicClient.verifyTypedData({
        mode: 'eoa',
        address: payment.payer,
        domain: { name: this.asset.name, version: this.asset.version, chainId: this.asset.chainId, verifyingContract: this.asset.address },
        types: transferWithAuthorizationTypes,
        primaryType: 'TransferWithAuthorization',
        message: { from: a.from, to: a.to, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore), nonce: a.nonce },
        signature: payment.signature,
      });
    } catch (error) {
      if (isTransportError(error)) throw relayErrors.unavailable();
      signed = false;
    }
    if (!signed) throw relayErrors.rejected(422, 'invalid_signature', `The authorization is not signed by its payer ${payment.payer}`);
  }
}

const stored = (row: BroadcastRow): RelayAnswer => ({ status: row.httpStatus!, body: row.answer });

/** 8–200 printable ASCII characters (it is echoed in logs and compared byte for byte). */
function checkedKey(key: string | null): string {
  if (!key || !/^[\x21-\x7e]{8,200}$/.test(key)) throw relayErrors.invalidIdempotencyKey();
  return key;
}
