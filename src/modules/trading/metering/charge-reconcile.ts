import type { AppContext } from '../../../context.js';
import { authorizationOutcome } from '../../../chain/payment-check.js';
import type { BackgroundLoop } from '../../../platform/jobs.js';
import type { ChargeRow, ChargeStore } from './charge-store.js';

/** One payment of the charge (a charge retried after a failure is paid with another authorization): its name in that settle's payment-identifier and in chain_payment_uses. */
export const settlementRecordOf = (chargeId: string, nonce: string) => `trading:charge:${chargeId}:${nonce.toLowerCase()}`;

/** How far back to look for the transaction of an authorization the chain says is used. */
const LOOKBACK_BLOCKS = 10_000n;
const BATCH = 20;

/**
 * Resolves metered charges left `settling` (a settle outcome unknown, or a crash after the claim) from
 * the chain: the transaction that used the charge's authorization to pay its amount to its payee settles
 * it; an authorization unused past its validBefore can never move money, so the charge fails (and the
 * boundary it guarded may be charged again with a new authorization).
 */
export class ChargeReconciler {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: ChargeStore,
  ) {}

  async sweep(): Promise<{ checked: number; resolved: number }> {
    const olderThan = new Date(this.ctx.clock.now().getTime() - this.ctx.config.trading.metering.reconcileAfterSeconds * 1000);
    const rows = await this.store.settling(olderThan, BATCH);
    let resolved = 0;
    for (const row of rows) {
      try {
        if (await this.resolve(row)) resolved += 1;
      } catch (error) {
        this.ctx.log.warn({ err: error, chargeId: row.id }, 'charge reconcile failed');
      }
    }
    return { checked: rows.length, resolved };
  }

  private async resolve(charge: ChargeRow): Promise<boolean> {
    const expected = { asset: charge.asset, payer: charge.payer, nonce: charge.nonce, payTo: charge.payTo, amount: charge.amountAtomic };
    const outcome = await authorizationOutcome(this.ctx.chain.publicClient, expected, BigInt(charge.validBefore), LOOKBACK_BLOCKS, this.ctx.config.txapi.confirmations);
    const now = this.ctx.clock.now();
    if (outcome.kind === 'open') return false;
    if (outcome.kind === 'dead') return this.store.finish(charge.id, { status: 'failed', reason: 'authorization_expired' }, now);
    if (outcome.kind === 'spent') return this.store.finish(charge.id, { status: 'failed', reason: 'settlement_mismatch' }, now);
    // The transfer already bought something else (the facilitator's success for a copy): not this charge's.
    if (!(await this.ctx.x402.claimPayment(settlementRecordOf(charge.id, charge.nonce), expected, outcome))) return this.store.finish(charge.id, { status: 'failed', reason: 'payment_already_used' }, now);
    return this.store.finish(charge.id, { status: 'settled', transactionHash: outcome.transactionHash.toLowerCase() }, now);
  }
}

export const chargeReconcileLoop = (reconciler: ChargeReconciler): BackgroundLoop => ({
  name: 'trading.charges',
  intervalMs: 15_000,
  leader: true,
  // Again at once only while a full batch moves: rows left for an operator must not spin the loop.
  run: async () => {
    const { checked, resolved } = await reconciler.sweep();
    return checked === BATCH && resolved > 0;
  },
});
