import type { AppContext } from '../../context.js';
import { authorizationOutcome, type ExpectedPayment } from '../../chain/payment-check.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import type { CreditsStore, TopUpRow } from './store.js';
import { settlementRecordOf, type TopUpService } from './top-up.js';

/** How far back the worker looks for the transaction of an authorization the chain says is used. */
const LOOKBACK_BLOCKS = 10_000n;
const BATCH = 20;

/**
 * Resolves top-ups left `settling` (an unknown settle outcome, or a crash after the claim) from what the
 * chain says: the transaction that used the authorization to pay this top-up's amount to its payee
 * credits it (once: see TopUpService.creditSettled) unless that transfer already bought something else;
 * an authorization unused past its validBefore, or spent on another transfer, can never pay it, so the
 * top-up fails and nothing is credited.
 */
export class TopUpReconciler {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: CreditsStore,
    private readonly topUps: TopUpService,
  ) {}

  async sweep(): Promise<{ checked: number; resolved: number }> {
    const olderThan = new Date(this.ctx.clock.now().getTime() - this.ctx.config.credits.reconcileAfterSeconds * 1000);
    const rows = await this.store.settlingTopUps(olderThan, BATCH);
    let resolved = 0;
    for (const row of rows) {
      try {
        if (await this.resolve(row)) resolved += 1;
      } catch (error) {
        this.ctx.log.warn({ err: error, topUpId: row.id }, 'top-up reconcile failed');
      }
    }
    return { checked: rows.length, resolved };
  }

  private async resolve(topUp: TopUpRow): Promise<boolean> {
    const expected: ExpectedPayment = { asset: topUp.asset, payer: topUp.payer, nonce: topUp.nonce, payTo: topUp.payTo, amount: topUp.amountAtomic };
    const outcome = await authorizationOutcome(this.ctx.chain.publicClient, expected, BigInt(topUp.validBefore), LOOKBACK_BLOCKS, this.ctx.config.txapi.confirmations);
    if (outcome.kind === 'open') return false;
    if (outcome.kind === 'dead') return this.store.markTopUpFailed(topUp.id, 'authorization_expired', this.ctx.clock.now());
    if (outcome.kind === 'spent') return this.store.markTopUpFailed(topUp.id, 'settlement_mismatch', this.ctx.clock.now());
    // The transfer already bought something else (the facilitator's success for a copy): no credit from it.
    if (!(await this.ctx.x402.claimPayment(settlementRecordOf(topUp.id, topUp.nonce), expected, outcome))) return this.store.markTopUpFailed(topUp.id, 'payment_already_used', this.ctx.clock.now());
    await this.topUps.creditSettled(topUp, outcome.transactionHash);
    return true;
  }
}

export function topUpReconcileLoop(reconciler: TopUpReconciler, intervalMs: number): BackgroundLoop {
  return { name: 'credits.top-up-reconcile', intervalMs, leader: true, run: async () => (await reconciler.sweep()).checked === BATCH };
}
