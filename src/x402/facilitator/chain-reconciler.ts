// The settlement reconciler of a node without a relayer key: a worker beside facilitator nodes that hold
// the keys (facilitator nodes run no loops). It resolves open rows from the chain alone, as the
// facilitator's own reconcileOpen does. What it cannot do is take over a claim whose node died before
// sending (that sends a transaction): such a row is resolved by the payment's next settle at a
// facilitator, or here as a failure once the chain's time has passed its validBefore (nothing moved).
import type { Logger } from 'pino';
import type { PublicClient } from 'viem';
import type { BlockClock } from '../../chain/block-clock.js';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { reconcileFromChain } from './judge.js';
import { keyOf, SettlementLedger } from './ledger.js';

export interface ChainReconcilerDeps {
  db: Db;
  clock: Clock;
  client: PublicClient;
  blockTime: BlockClock;
  log: Logger;
  /** Open rows untouched this long are the reconciler's (FACILITATOR_RECONCILE_AFTER_MS). */
  reconcileAfterMs: number;
}

export class ChainSettlementReconciler {
  readonly #ledger: SettlementLedger;

  constructor(private readonly deps: ChainReconcilerDeps) {
    this.#ledger = new SettlementLedger(deps.db, deps.clock);
  }

  async reconcileOpen(limit = 50): Promise<{ checked: number; resolved: number }> {
    const { clock, client, blockTime, log, reconcileAfterMs } = this.deps;
    const rows = await this.#ledger.listOpen(new Date(clock.now().getTime() - reconcileAfterMs), limit);
    let resolved = 0;
    for (const row of rows) {
      try {
        if (await reconcileFromChain({ client, ledger: this.#ledger, blockTime, log }, row)) resolved += 1;
        else await this.#ledger.touch(keyOf(row));
      } catch (error) {
        log.warn({ err: error, nonce: row.nonce, payer: row.payer }, 'settlement reconcile failed');
      }
    }
    return { checked: rows.length, resolved };
  }
}
