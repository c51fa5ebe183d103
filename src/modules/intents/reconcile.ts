import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { IndexedSettlement, PaymentIndex } from './payments.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import type { IntentRow, IntentsStore } from './store.js';

export const TX_HASH_UNIQUE = 'payment_intents_transaction_hash_unique';

/** failureCode values set by reconciliation and settlement (documented in docs/intents.md, "failureCode values"). */
export const CONDITIONS = {
  unknown: { code: 'settlement_result_unknown', message: 'The settlement outcome is not known yet; it is being reconciled' },
  notIndexed: {
    code: 'settlement_not_indexed',
    message: 'The authorization is used on chain but no settlement by our facilitator is indexed yet',
  },
  notFinal: {
    code: 'settlement_not_final',
    message: 'The settlement is indexed but its block is not final yet; it settles once it is',
  },
  authorizationExpired: {
    code: 'authorization_expired',
    message: 'The submitted authorization expired without a transfer; the intent can be paid again',
  },
  mismatch: { code: 'settlement_mismatch', message: 'The indexed transfer does not match the intent (recipient, asset or amount)' },
  alreadyUsed: { code: 'payment_already_used', message: 'The settlement transaction belongs to another intent' },
} as const;

/**
 * Resolves a `settling` intent from the index of our facilitator's transactions (the state table):
 * found and final → settled; the authorization expired unused → pending (or expired past expiresAt); otherwise
 * it stays settling. Used by the reconcile endpoint and the reconciliation worker alike.
 */
export class Reconciler {
  constructor(
    private readonly store: IntentsStore,
    private readonly index: PaymentIndex,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** The intent after reconciliation, or 'unavailable' when the chain or the index cannot be read. */
  async reconcile(intent: IntentRow): Promise<IntentRow | 'unavailable'> {
    if (intent.status !== 'settling' || !intent.authorizationId) return intent;
    const authorization = await this.store.authorization(intent.authorizationId);
    if (!authorization) return intent;
    const key = { network: intent.network, asset: intent.asset, payer: authorization.payer, nonce: authorization.nonce };
    let found: IndexedSettlement | null;
    let state: { used: boolean; chainTime: number } | null = null;
    try {
      found = await this.index.findByAuthorization(key);
      // Index first, then chain: a transfer the index has not seen yet shows as `used`.
      if (!found) state = await this.index.authorizationState(key);
    } catch (error) {
      this.log.warn({ err: error, intentId: intent.id }, 'intent reconciliation could not read the chain or index');
      return 'unavailable';
    }
    const now = this.clock.now();
    // Only a final row settles: a transfer in a block that a reorg can still drop is not a payment yet.
    if (found && !found.final) await this.store.note(intent.id, authorization.id, CONDITIONS.notFinal, now);
    else if (found) await this.settleFrom(intent, authorization.id, authorization.payer, found);
    else if (state!.used) await this.store.note(intent.id, authorization.id, CONDITIONS.notIndexed, now);
    // validBefore has passed on chain and the token never used it: it can never move money now.
    else if (state!.chainTime >= authorization.validBefore) await this.store.reopen(intent.id, authorization.id, CONDITIONS.authorizationExpired, now);
    return (await this.store.byId(intent.id)) ?? intent;
  }

  private async settleFrom(intent: IntentRow, authorizationId: string, payer: string, found: IndexedSettlement) {
    const now = this.clock.now();
    if (found.recipient.toLowerCase() !== intent.payTo.toLowerCase() || found.value !== BigInt(intent.amount)) {
      await this.store.fail(intent.id, authorizationId, CONDITIONS.mismatch, now);
      return;
    }
    try {
      await this.store.settle(intent.id, authorizationId, { hash: found.transactionHash, payer, settledAt: new Date(found.blockTimestamp * 1000) }, now);
    } catch (error) {
      if (!isUniqueViolation(error, TX_HASH_UNIQUE)) throw error;
      await this.store.fail(intent.id, authorizationId, CONDITIONS.alreadyUsed, now);
    }
  }
}
