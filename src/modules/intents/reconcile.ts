import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { ChainOutcome, ExpectedAuthorization, PaymentChain } from './payments.js';
import type { IntentsStore } from './store.js';
import type { IntentRow } from './tables.js';
import { noIntentOutcomes, type IntentOutcomes } from './metrics.js';

/**
 * failureCode values set by reconciliation and settlement, and lastPaymentError codes of our own (documented in
 * docs/intents.md, "failureCode values" and "lastPaymentError").
 */
export const CONDITIONS = {
  unknown: { code: 'settlement_result_unknown', message: 'The settlement outcome is not known yet; it is being reconciled' },
  notFinal: {
    code: 'settlement_not_final',
    message: 'The authorization is used on chain but its transaction is not final yet; it settles once it is',
  },
  authorizationExpired: {
    code: 'authorization_expired',
    message: 'The submitted authorization expired without a transfer; the intent can be paid again',
  },
  mismatch: { code: 'settlement_mismatch', message: "The authorization was used by a transfer that does not pay the intent (recipient or amount)" },
  alreadyUsed: { code: 'payment_already_used', message: 'The transfer that used the authorization already paid for something else' },
  /** lastPaymentError only: the facilitator sent nothing (unreachable, its gas float low, a settle budget spent). */
  settleUnavailable: {
    code: 'facilitator_unavailable',
    message: 'The payment could not be settled right now and nothing was sent; the same payment can be retried shortly',
  },
  /** lastPaymentError only: the facilitator had settled this authorization before, for another payment. */
  usedElsewhere: {
    code: 'invalid_exact_evm_nonce_already_used',
    message: 'This authorization was already settled for another payment; nothing was charged for this intent. Sign a new one',
  },
} as const;

/** The authorization's name in its settles' payment-identifier and in chain_payment_uses. */
export const settlementRecordOf = (authorizationId: string) => `intents:authorization:${authorizationId}`;

/**
 * Resolves a `settling` intent from the chain, as the facilitator does (the Transfer paired with the
 * authorization's own AuthorizationUsed log, reads pinned to one block, at the finality depth), so a payment
 * executed by anyone (our relayer, a front-run, the payer) is found. Paid exactly → settled, once the transfer
 * is claimed for this intent (a copy's settle may have bought something with it first: then failed); spent on
 * another transfer → failed; unused past validBefore → pending again; otherwise it stays settling. Used by the
 * reconcile endpoint, the reconciliation worker and the operator's `intents resolve`.
 */
export class Reconciler {
  constructor(
    private readonly store: IntentsStore,
    private readonly chain: PaymentChain,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Counts the moves reconciliation makes (metrics.ts). */
    private readonly outcome: IntentOutcomes = noIntentOutcomes,
  ) {}

  /** The intent after reconciliation, or 'unavailable' when the chain cannot be read. */
  async reconcile(intent: IntentRow): Promise<IntentRow | 'unavailable'> {
    if (intent.status !== 'settling' || !intent.authorizationId) return intent;
    const authorization = await this.store.authorization(intent.authorizationId);
    if (!authorization) return intent;
    const expected: ExpectedAuthorization = {
      network: intent.network,
      asset: intent.asset,
      payer: authorization.payer,
      nonce: authorization.nonce,
      payTo: intent.payTo,
      amount: intent.amount,
      validBefore: authorization.validBefore,
    };
    let outcome: ChainOutcome;
    let ours = false;
    try {
      outcome = await this.chain.outcome(expected);
      if (outcome.kind === 'paid') ours = await this.chain.claim(expected, outcome.transactionHash, outcome.logIndex, settlementRecordOf(authorization.id));
    } catch (error) {
      this.log.warn({ err: error, intentId: intent.id }, 'intent reconciliation could not read the chain');
      return 'unavailable';
    }
    const now = this.clock.now();
    if (outcome.kind === 'paid' && ours) await this.settleFrom(intent, authorization.id, authorization.payer, outcome);
    else if (outcome.kind === 'paid') this.moved(await this.store.fail(intent.id, authorization.id, CONDITIONS.alreadyUsed, now), 'failed');
    else if (outcome.kind === 'spent') this.moved(await this.store.fail(intent.id, authorization.id, CONDITIONS.mismatch, now), 'failed');
    // validBefore has passed on chain and the token never used it: it can never move money now.
    else if (outcome.kind === 'dead') {
      const expired = CONDITIONS.authorizationExpired;
      this.moved(await this.store.reopen(intent.id, authorization.id, expired, now, { outcome: 'unused', failure: expired }), 'reopened');
    }
    // Used, but its transaction is not final (or not found) yet: a reorg could still drop it.
    else if (outcome.used) await this.store.note(intent.id, authorization.id, CONDITIONS.notFinal, now);
    return (await this.store.byId(intent.id)) ?? intent;
  }

  private async settleFrom(intent: IntentRow, authorizationId: string, payer: string, paid: { transactionHash: string; blockTimestamp: number }) {
    this.moved(await this.store.settle(intent.id, authorizationId, { hash: paid.transactionHash, payer, settledAt: new Date(paid.blockTimestamp * 1000) }, this.clock.now()), 'settled');
  }

  private moved(moved: boolean, outcome: 'settled' | 'failed' | 'reopened'): void {
    if (moved) this.outcome('reconcile', outcome);
  }
}
