import type { Hex } from 'viem';
import type { AppContext } from '../../context.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { authorizationOutcome, checkPaymentTransaction, type ExpectedPayment } from '../../chain/payment-check.js';
import { storageErrors } from './errors.js';
import type { OrderRow, StorageStore } from './store.js';

/**
 * One payment of the order: its name in that settle's payment-identifier and in chain_payment_uses. The
 * nonce is part of it: an order released after a failed payment is paid again with another authorization,
 * and a payment-identifier names one payload only.
 */
export const settlementRecordOf = (orderId: string, nonce: string) => `storage:order:${orderId}:${nonce.toLowerCase()}`;

/** How far back the worker looks for the transaction of an authorization the chain says is used. */
const LOOKBACK_BLOCKS = 10_000n;

/**
 * Moves payment_pending orders on from what the chain says, never from what a caller says: the
 * caller's reconcile names a transaction, which counts only if its receipt uses this order's
 * authorization to pay this order's amount to its recipient; the worker finds that transaction itself,
 * or releases the order once its authorization can never be used (unused past validBefore).
 * Neither charges anyone or stores the image: a paid order is redeemed by repeating the upload.
 */
export class StorageReconciler {
  constructor(
    private readonly ctx: AppContext,
    private readonly store: StorageStore,
  ) {}

  /** POST /orders/{id}/reconcile: confirms the pending payment with its transaction hash. */
  async confirm(order: OrderRow, transactionHash: string): Promise<OrderRow> {
    const hash = transactionHash.toLowerCase();
    if (order.status !== 'payment_pending') {
      if (order.transactionHash === hash) return order;
      throw storageErrors.nothingToReconcile(order.status);
    }
    const verdict = await checkPaymentTransaction(this.ctx.chain.publicClient, hash as Hex, expectedOf(order), this.ctx.config.txapi.confirmations).catch((error: unknown) => {
      this.ctx.log.warn({ err: error, orderId: order.id }, 'upload reconcile could not read the chain');
      throw storageErrors.unavailable('The chain cannot be read right now; retry reconcile');
    });
    if (verdict.kind === 'unconfirmed') throw storageErrors.notConfirmable(verdict.message);
    if (!(await this.claimTransfer(order, hash, verdict.logIndex))) throw storageErrors.transactionUsed();
    await this.store.markPaid(order.id, expectedOf(order), hash);
    return (await this.store.byId(order.id)) ?? order;
  }

  /** One worker pass over payments pending for longer than a live request takes. */
  async sweep(limit = 20): Promise<{ checked: number; moved: number }> {
    const rows = await this.store.pendingBefore(this.ctx.config.storage.reconcileAfterSeconds, limit);
    let moved = 0;
    for (const order of rows) {
      try {
        if (await this.resolve(order)) moved += 1;
      } catch (error) {
        this.ctx.log.warn({ err: error, orderId: order.id }, 'upload payment reconcile failed');
      }
    }
    return { checked: rows.length, moved };
  }

  private async resolve(order: OrderRow): Promise<boolean> {
    const expected = expectedOf(order);
    const outcome = await authorizationOutcome(this.ctx.chain.publicClient, expected, BigInt(order.authorizationValidBefore ?? 0), LOOKBACK_BLOCKS, this.ctx.config.txapi.confirmations);
    // Unused past validBefore, or spent on something else: it can never pay this order, which may be paid with a new signature.
    if (outcome.kind === 'dead' || outcome.kind === 'spent') return this.store.release(order.id, expected);
    if (outcome.kind === 'open') return false;
    // The transfer already bought something else (the facilitator's success for a copy): not this order's.
    if (!(await this.claimTransfer(order, outcome.transactionHash, outcome.logIndex))) return this.store.release(order.id, expected);
    await this.store.markPaid(order.id, expectedOf(order), outcome.transactionHash);
    return true;
  }

  /** One transfer buys one thing: this order takes it unless something else (a copy's settle) already has. */
  private claimTransfer(order: OrderRow, hash: string, logIndex: number): Promise<boolean> {
    return this.ctx.x402.claimPayment(settlementRecordOf(order.id, order.authorizationNonce ?? ''), expectedOf(order), { transactionHash: hash, logIndex });
  }
}

function expectedOf(order: OrderRow): ExpectedPayment {
  return { asset: order.asset, payer: order.payer ?? '', nonce: order.authorizationNonce ?? '', payTo: order.payTo, amount: order.amount };
}

/** The worker's loops: pending payments resolved from the chain; fulfilled orders expired at the end of retention. */
export function storageLoops(ctx: AppContext, store: StorageStore, reconciler: StorageReconciler): BackgroundLoop[] {
  return [
    {
      name: 'storage-payment-reconcile',
      intervalMs: ctx.config.storage.sweepIntervalMs,
      leader: true,
      run: async () => (await reconciler.sweep()).checked === 20,
    },
    {
      name: 'storage-expiry',
      intervalMs: ctx.config.storage.sweepIntervalMs,
      leader: true,
      run: async () => (await store.expireDue(500)) === 500,
    },
  ];
}
