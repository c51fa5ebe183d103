import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { AppContext } from '../../context.js';
import { crashPoint } from '../../platform/crash-points.js';
import { newId, UUID_PATTERN } from '../../platform/ids.js';
import type { Caller } from '../../platform/request-context.js';
import { intentErrors } from './errors.js';
import { authorizationOf, refusedBeforeTransfer, type Charge, type PaymentRail, type SignedAuthorization } from './payments.js';
import type { SettleOutcome } from '../../x402/server/payment-steps.js';
import { CONDITIONS, settlementRecordOf } from './reconcile.js';
import type { SettlementBody } from './schemas.js';
import { intentOutcomes, type IntentOutcomes } from './metrics.js';
import type { IntentsStore } from './store.js';
import type { IntentRow } from './tables.js';
import { paymentUrlOf, settlementBody } from './views.js';

/** What the route sends: a 402 challenge or a settlement, with their headers. */
export type PayAnswer =
  | { status: 402; body: PaymentRequired; headers: Record<string, string> }
  | { status: 200; body: SettlementBody; headers: Record<string, string> };

export interface PayRequest {
  intentId: string;
  /** PAYMENT-SIGNATURE, else X-PAYMENT. */
  paymentHeader: string | null;
  clientAddress: string;
  /** The request that asked: its id goes to the facilitator, its route labels the settle's gas. */
  caller?: Caller;
}

const NO_STORE = { 'cache-control': 'no-store' };
const NONCE_ALREADY_USED = 'invalid_exact_evm_nonce_already_used';

/**
 * The public pay endpoint's logic. Order matters: cheap refusals first, then verification, then the
 * intent's attempt budget (only a payment that verifies spends it), then the one conditional UPDATE that
 * lets a single request settle (reserving the authorization), and only then the facilitator's settle,
 * the one step that can move money. A settle that moved nothing leaves the intent payable.
 */
export class PayService {
  /** Counts the moves this service makes (metrics.ts). */
  private readonly outcome: IntentOutcomes;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: IntentsStore,
    private readonly rail: PaymentRail,
  ) {
    this.outcome = intentOutcomes(ctx.metrics);
  }

  async pay(request: PayRequest): Promise<PayAnswer> {
    const limits = this.ctx.config.intents.payLimits;
    await this.limit(`intent-pay:client:${request.clientAddress}`, limits.perClient, 'client');
    const intent = await this.payable(request.intentId);
    if (intent.status === 'settled') return this.settledAnswer(intent);
    const charge = this.chargeOf(intent);
    if (!request.paymentHeader) return this.challenge(charge);

    const payload = this.rail.decode(request.paymentHeader);
    const authorization = payload && authorizationOf(payload);
    if (!payload || !authorization) {
      throw intentErrors.conflict('The payment header is malformed: expected a base64 x402 v2 exact EVM payment payload', { reason: 'malformed_payment' });
    }
    // Before matching: an authorization signed for another intent does not match this one's challenge.
    const known = await this.knownAuthorization(intent, authorization);
    if (known) return known;
    const { paymentRequired } = await this.challengeOf(charge);
    const requirements = this.rail.select(paymentRequired, payload);
    if (!requirements) return this.challenge(charge, 'No matching payment requirements');

    const verified = await this.rail.verify(payload, requirements, request.caller);
    if (verified.kind === 'unavailable') throw intentErrors.facilitatorUnavailable();
    if (verified.kind === 'invalid') {
      // A concurrent pay of this same authorization may have claimed it while we verified (the
      // facilitator then calls it used): that is a settlement in progress, or done, not a bad payment.
      return (await this.knownAuthorization(intent, authorization)) ?? this.challenge(charge, verified.reason);
    }

    // Only now does the attempt count against the intent: a payment its signer can make, for this charge.
    // Junk (malformed, unmatched, forged, unfunded) counted against its sender alone (the client limit
    // above), so nobody but a payer able to pay can spend the budget that would refuse the real payment.
    await this.limit(`intent-pay:intent:${intent.id}`, limits.perIntent, 'intent');
    const authorizationId = newId();
    const claim = await this.store.claim({ id: authorizationId, intentId: intent.id, ...authorization }, this.ctx.clock.now());
    if (claim === 'authorization_taken') {
      const known = await this.knownAuthorization(intent, authorization);
      if (known) return known;
      throw intentErrors.settlementInProgress();
    }
    if (claim === 'not_pending') return this.afterLostClaim(intent.id);
    crashPoint('intent.after-claim');
    return this.settle(intent, charge, { id: authorizationId, payer: authorization.payer }, payload, requirements, request.caller);
  }

  private async settle(
    intent: IntentRow,
    charge: Charge,
    authorization: { id: string; payer: string },
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    caller: Caller | undefined,
  ): Promise<PayAnswer> {
    let outcome: SettleOutcome;
    try {
      outcome = await this.rail.settle(payload, requirements, settlementRecordOf(authorization.id), caller);
      crashPoint('intent.after-settle');
    } catch (error) {
      // An exception after the claim says nothing about what reached the chain.
      this.ctx.log.error({ err: error, intentId: intent.id }, 'settlement threw; leaving the intent to reconciliation');
      outcome = { kind: 'unknown', transaction: null, message: String(error) };
    }
    const now = this.ctx.clock.now();
    switch (outcome.kind) {
      case 'settled':
        return this.recordSettled(intent, authorization, outcome.transaction);
      case 'failed':
        return this.refused(intent, charge, authorization.id, outcome);
      case 'unavailable':
        // Nothing was sent (unreachable, the gas float low, a settle budget spent): the same payment may be retried.
        if (await this.store.release(intent.id, authorization.id, CONDITIONS.settleUnavailable, now)) this.outcome('pay', 'released');
        throw intentErrors.facilitatorUnavailable();
      case 'unknown':
        if (outcome.transaction) await this.store.recordPendingHash(authorization.id, outcome.transaction, now);
        await this.store.note(intent.id, authorization.id, CONDITIONS.unknown, now);
        this.outcome('pay', 'unknown');
        throw intentErrors.settlementResultUnknown();
    }
  }

  /**
   * The facilitator refused the settle. Nothing moved for this intent when the refusal ends before any
   * transfer or with one that reverted (the balance fell short since verify, say, or the authorization
   * expired), or when the authorization was settled before, for another payment: the intent is payable
   * again with the refusal as its lastPaymentError, and the authorization stays reserved (a new one pays).
   * A refusal that cannot rule a transfer of this payment out is left settling, for reconciliation to
   * decide from the chain. So pay never makes an intent `failed`: only a transfer that paid something
   * else does (reconcile.ts).
   */
  private async refused(intent: IntentRow, charge: Charge, authorizationId: string, outcome: Extract<SettleOutcome, { kind: 'failed' }>): Promise<PayAnswer> {
    const now = this.ctx.clock.now();
    if (outcome.reason === NONCE_ALREADY_USED) {
      // The facilitator settled this authorization before our claim (e.g. it paid another x402
      // purchase) and says success once: it cannot also pay this intent. Nothing was sent again.
      const reopened = await this.store.reopen(intent.id, authorizationId, CONDITIONS.usedElsewhere, now, { outcome: 'used_elsewhere', failure: null });
      if (reopened) this.outcome('pay', 'reopened');
      throw intentErrors.authorizationAlreadyUsed('This authorization was already settled for another payment; sign a new one');
    }
    if (!refusedBeforeTransfer(outcome.reason)) {
      this.ctx.log.warn({ intentId: intent.id, reason: outcome.reason }, 'settle refused without ruling a transfer out; leaving the intent to reconciliation');
      if (outcome.response.transaction) await this.store.recordPendingHash(authorizationId, outcome.response.transaction, now);
      await this.store.note(intent.id, authorizationId, CONDITIONS.unknown, now);
      this.outcome('pay', 'unknown');
      throw intentErrors.settlementResultUnknown();
    }
    const attempt = { code: outcome.reason, message: outcome.message };
    if (await this.store.reopen(intent.id, authorizationId, attempt, now, { outcome: 'failed', failure: null })) this.outcome('pay', 'reopened');
    // As it now stands (reconciliation may have moved it first): payable again, answered with a fresh
    // challenge saying why and the refused settle's PAYMENT-RESPONSE; otherwise pay's usual answer.
    const current = await this.payable(intent.id);
    if (current.status === 'settled') return this.settledAnswer(current);
    const answer = await this.challenge(charge, outcome.reason);
    const response = this.rail.encodeResponse(outcome.response);
    return { ...answer, headers: { ...answer.headers, 'payment-response': response, 'x-payment-response': response } };
  }

  /** The payer is the authorization's signer (verified by the facilitator), whatever the settle answer says. */
  private async recordSettled(intent: IntentRow, authorization: { id: string; payer: string }, transaction: string): Promise<PayAnswer> {
    const now = this.ctx.clock.now();
    // False when reconciliation moved it first: its move, counted there.
    if (await this.store.settle(intent.id, authorization.id, { hash: transaction.toLowerCase(), payer: authorization.payer, settledAt: now }, now)) this.outcome('pay', 'settled');
    crashPoint('intent.after-commit');
    // Reconciliation may have settled it first; either way the stored row is the answer.
    const current = await this.store.byId(intent.id);
    if (current?.status !== 'settled') throw intentErrors.settlementInProgress();
    return this.settledAnswer(current);
  }

  /** The intent if it may be paid or read as settled; the spec's refusals otherwise. */
  private async payable(intentId: string): Promise<IntentRow> {
    let intent = UUID_PATTERN.test(intentId) ? await this.store.byId(intentId) : undefined;
    if (!intent) throw intentErrors.intentNotFound();
    if (intent.status === 'settled') return intent;
    const now = this.ctx.clock.now();
    if (intent.status === 'pending' && intent.expiresAt <= now) {
      if (await this.store.expire(intent.id, now)) this.outcome('expiry', 'expired');
      intent = { ...intent, status: 'expired' };
    }
    if (intent.status === 'expired') throw intentErrors.expired(intent.expiresAt);
    const merchant = await this.ctx.services.projects.merchant(intent.merchantId);
    if (!merchant?.enabled) throw intentErrors.merchantDisabled();
    if (intent.status === 'settling') throw intentErrors.settlementInProgress();
    if (intent.status === 'failed') {
      throw intentErrors.conflict('This intent failed and cannot be paid', { status: 'failed', failureCode: intent.failureCode, failureMessage: intent.failureMessage });
    }
    return intent;
  }

  /** Someone else moved the intent between our read and our claim: answer with what it is now. */
  private async afterLostClaim(intentId: string): Promise<PayAnswer> {
    const intent = await this.payable(intentId);
    if (intent.status === 'settled') return this.settledAnswer(intent);
    throw intentErrors.settlementInProgress();
  }

  /**
   * An authorization we already hold: refused (another intent's, or spent), 409 while its settle
   * runs, or this intent's settlement when a copy of it won. Null when we have never seen it.
   * Checked before verification, after a failed one, and inside the claim, so a reused
   * authorization never reaches settle.
   */
  private async knownAuthorization(intent: IntentRow, authorization: SignedAuthorization): Promise<PayAnswer | null> {
    const owner = await this.store.authorizationByNonce(authorization.payer, authorization.nonce);
    if (!owner) return null;
    if (owner.intentId !== intent.id) throw intentErrors.authorizationAlreadyUsed();
    if (owner.outcome === 'settling') throw intentErrors.settlementInProgress();
    // This very authorization settled this intent (a concurrent copy won): the settlement is the answer.
    const current = owner.outcome === 'settled' ? await this.store.byId(intent.id) : undefined;
    if (current?.status === 'settled') return this.settledAnswer(current);
    throw intentErrors.authorizationAlreadyUsed('This authorization was already submitted for this intent; sign a new one');
  }

  private async limit(key: string, limit: number, scope: 'intent' | 'client'): Promise<void> {
    const result = await this.ctx.rateLimiter.hit(key, { limit, windowSeconds: this.ctx.config.intents.payLimits.windowSeconds });
    if (!result.allowed) throw intentErrors.rateLimited(result.retryAfterSeconds, scope);
  }

  private chargeOf(intent: IntentRow): Charge {
    return {
      network: intent.network,
      asset: intent.asset,
      payTo: intent.payTo,
      amount: intent.amount,
      maxTimeoutSeconds: this.ctx.config.intents.payTimeoutSeconds,
      resource: {
        url: paymentUrlOf(this.ctx.urls.api, intent.id),
        description: intent.description ?? `Payment intent ${intent.id}`,
        mimeType: 'application/json',
        serviceName: 'Tollgate',
      },
    };
  }

  private async challengeOf(charge: Charge, error?: string) {
    try {
      return await this.rail.challenge(charge, error);
    } catch (cause) {
      // Building requirements needs the facilitator's supported kinds.
      this.ctx.log.warn({ err: cause }, 'could not build the x402 challenge');
      throw intentErrors.facilitatorUnavailable();
    }
  }

  private async challenge(charge: Charge, error?: string): Promise<PayAnswer> {
    const { paymentRequired, header } = await this.challengeOf(charge, error ?? 'Payment required');
    return { status: 402, body: paymentRequired, headers: { ...NO_STORE, 'payment-required': header } };
  }

  private settledAnswer(intent: IntentRow): PayAnswer {
    const response: SettleResponse = {
      success: true,
      transaction: intent.transactionHash!,
      network: intent.network as SettleResponse['network'],
      payer: intent.payer ?? undefined,
    };
    const encoded = this.rail.encodeResponse(response);
    return { status: 200, body: settlementBody(intent), headers: { ...NO_STORE, 'payment-response': encoded, 'x-payment-response': encoded } };
  }
}
