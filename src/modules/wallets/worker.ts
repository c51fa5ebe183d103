import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { errorText } from '../../platform/log-redaction.js';
import type { PaymentReconciler } from './reconcile.js';
import type { WalletsStore } from './store.js';

const BATCH = 50;
/** A payment touched this recently may still have its request in flight; the request asks the chain itself. */
const IDLE_MS = 5_000;

/** What the loop shows an operator (admin command `wallet.payments-reconciler`, and its logs). */
export interface ReconcilerStatus {
  /** When a tick last started and last finished without an error. */
  lastRunAt: string | null;
  lastSuccessAt: string | null;
  /** Age of the oldest open (`pending`/`unknown`) payment on this node's network, seconds; 0 when none. */
  lagSeconds: number;
  /** Payments this loop moved since the process started. */
  settled: number;
  failed: number;
  /** Ticks and single payments that failed (chain or database unreadable), and the last such error. */
  errors: number;
  lastError: string | null;
}

export interface PaymentsLoop extends BackgroundLoop {
  status(): ReconcilerStatus;
}

/**
 * Checks every open pay-and-call payment on the chain (one leader in the cluster): passes over the
 * open payments oldest first, BATCH per tick, and runs again at once while a batch comes back full.
 * A payment the chain leaves open is simply seen again on the next pass.
 */
export function paymentsReconcileLoop(store: WalletsStore, reconciler: PaymentReconciler, network: string, clock: Clock, log: Logger, intervalMs: number): PaymentsLoop {
  const status: ReconcilerStatus = { lastRunAt: null, lastSuccessAt: null, lagSeconds: 0, settled: 0, failed: 0, errors: 0, lastError: null };
  let cursor: { createdAt: Date; id: string } | null = null;
  const noteError = (error: unknown) => {
    status.errors += 1;
    status.lastError = errorText(error).slice(0, 500); // the chain's errors quote the RPC URL and its key
  };
  return {
    name: 'wallets.payments-reconcile',
    intervalMs,
    leader: true,
    status: () => ({ ...status }),
    async run(signal) {
      const now = clock.now();
      status.lastRunAt = now.toISOString();
      let unreadable = 0;
      try {
        const oldest = await store.oldestOpen(network);
        status.lagSeconds = oldest ? Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 1000)) : 0;
        const due = await store.openPayments(network, new Date(now.getTime() - IDLE_MS), cursor, BATCH);
        for (const payment of due) {
          if (signal.aborted) break;
          try {
            const after = await reconciler.reconcile(payment);
            if (after.status === 'settled') status.settled += 1;
            else if (after.status === 'failed') status.failed += 1;
          } catch (error) {
            unreadable += 1;
            noteError(error);
            log.warn({ paymentId: payment.row.id, err: error }, 'pay-and-call payment reconciliation could not read the chain');
          }
        }
        const last = due.at(-1);
        cursor = due.length === BATCH && last ? { createdAt: last.row.createdAt, id: last.row.id } : null;
      } catch (error) {
        noteError(error);
        throw error;
      }
      // A payment the chain could not answer for fails the tick, so the runner backs off and
      // readiness sees the loop failing (status.errors has already counted each payment).
      if (unreadable > 0) throw new Error(`${unreadable} open payment(s) could not be checked on chain: ${status.lastError}`);
      status.lastSuccessAt = clock.now().toISOString();
      // More may wait: go again at once.
      return cursor !== null;
    },
  };
}
