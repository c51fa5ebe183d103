import type { TransferFollower } from '../../chain/indexer/deposits.js';
import type { AppContext } from '../../context.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { intentOutcomes } from './metrics.js';
import type { Deposits } from './deposits.js';
import type { Reconciler } from './reconcile.js';
import type { Refunds } from './refunds.js';
import type { DepositSweeper } from './sweep.js';
import type { IntentsStore } from './store.js';

const BATCH = 50;
const EXPIRY_BATCH = 500;

/**
 * The automatic reconciliation (one leader in the cluster): each tick it expires overdue pending
 * intents, then reconciles intents that have been `settling` for longer than the grace period
 * (so it leaves requests still in flight alone), oldest first. It runs again at once while a batch
 * comes back full.
 */
export function reconciliationLoop(ctx: AppContext, store: IntentsStore, reconciler: Reconciler): BackgroundLoop {
  const { intervalMs, graceSeconds } = ctx.config.intents.reconcile;
  // Where this pass over the settling intents has got to; null starts a new pass.
  let cursor: { since: Date; id: string } | null = null;
  const outcome = intentOutcomes(ctx.metrics);
  return {
    name: 'intents-reconcile',
    intervalMs,
    leader: true,
    async run(signal) {
      const now = ctx.clock.now();
      const expired = await store.expireDue(now, EXPIRY_BATCH);
      outcome('expiry', 'expired', expired);
      const due = await store.settlingSince(new Date(now.getTime() - graceSeconds * 1000), cursor, BATCH);
      let unavailable = 0;
      for (const intent of due) {
        if (signal.aborted) break;
        if ((await reconciler.reconcile(intent)) === 'unavailable') unavailable += 1;
      }
      if (expired || due.length) ctx.log.debug({ expired, reconciled: due.length, unavailable }, 'intent reconciliation tick');
      const last = due.at(-1);
      cursor = due.length === BATCH && last?.settlingSince ? { since: last.settlingSince, id: last.id } : null;
      // More may wait: run again at once, unless the chain or index is down (then sleep and retry).
      return (expired === EXPIRY_BATCH || cursor !== null) && unavailable === 0;
    },
  };
}

/** Sweeps (and refunds) looked at per tick. */
const MONEY_BATCH = 50;

/**
 * Deposits and refunds (one leader in the cluster), each tick: the deposit watcher reads the next final blocks and
 * credits (and settles) what arrived at deposit addresses; intents funded while they could not settle are settled;
 * deposits are swept on to their merchants; sweeps and refunds a crash or a lost answer left open are decided
 * (after the reconcile grace, so requests still in flight are left alone). Runs again at once while blocks wait.
 */
export function depositsLoop(ctx: AppContext, parts: { follower: TransferFollower; deposits: Deposits; sweeper: DepositSweeper; refunds: Refunds }): BackgroundLoop {
  const { graceSeconds } = ctx.config.intents.reconcile;
  return {
    name: 'intents-deposits',
    intervalMs: ctx.config.txapi.pollMs,
    leader: true,
    async run() {
      const read = await parts.follower.tick();
      await parts.deposits.store.settleAllFunded();
      await parts.sweeper.sweepDue(MONEY_BATCH);
      await parts.sweeper.reconcileSending(graceSeconds, MONEY_BATCH);
      await parts.refunds.reconcilePending(graceSeconds, MONEY_BATCH);
      return read.more;
    },
  };
}
