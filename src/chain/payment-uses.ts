// One transfer buys one thing: the claim on chain_payment_uses that every path granting a service for a
// chain-confirmed payment takes first (the facilitator before it answers `success: true`, each module's
// reconciler before it grants from the chain). The database decides; a lost race matches no row.
import { and, eq, sql } from 'drizzle-orm';
import { getAddress } from 'viem';
import type { Executor } from '../platform/db.js';
import { chainPaymentUses } from './tables.js';

/** A paired Transfer (see pairPaymentLogs) and the authorization it executed. */
export interface PaymentUse {
  network: string;
  transactionHash: string;
  /** The Transfer log's index. */
  logIndex: number;
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: string;
}

export class PaymentUses {
  constructor(private readonly db: Executor) {}

  /**
   * Takes the payment for `claimant`. True when it is theirs (now, or already: a retry of the same grant);
   * false when something else holds it. Pass the open transaction when the grant commits with it.
   */
  async claim(use: PaymentUse, claimant: string, db: Executor = this.db): Promise<boolean> {
    const [taken] = await this.claimMany([{ use, claimant }], db);
    return taken!;
  }

  /** claim() for several payments in one INSERT: one answer per claim, in order. */
  async claimMany(claims: ReadonlyArray<{ use: PaymentUse; claimant: string }>, db: Executor = this.db): Promise<boolean[]> {
    if (claims.length === 0) return [];
    const rows = claims.map(({ use, claimant }) => ({
      network: use.network,
      transactionHash: use.transactionHash.toLowerCase(),
      logIndex: use.logIndex,
      asset: getAddress(use.asset),
      payer: getAddress(use.payer),
      nonce: use.nonce.toLowerCase(),
      payTo: getAddress(use.payTo),
      amount: use.amount,
      claimant,
    }));
    // In key order, so concurrent batches claiming a shared transfer lock it in the same order.
    const ordered = [...rows].sort((a, b) => (useKey(a) < useKey(b) ? -1 : 1));
    // One text[] per column, unnest()ed in key order: drizzle's .values(rows) costs ~100 µs of CPU per row to
    // build, a settle's hot path (every settled answer claims its transfer here; bench/RESULTS.md, issue 46).
    const column = (pick: (row: (typeof ordered)[number]) => string | number) => sql`${sql.param(ordered.map((row) => String(pick(row))))}::text[]`;
    const inserted = await db
      .insert(chainPaymentUses)
      .select(
        sql`select v.network, v.tx, v.log_index::integer, v.asset, v.payer, v.nonce, v.pay_to, v.amount::numeric, v.claimant, now()
          from unnest(${column((r) => r.network)}, ${column((r) => r.transactionHash)}, ${column((r) => r.logIndex)}, ${column((r) => r.asset)},
            ${column((r) => r.payer)}, ${column((r) => r.nonce)}, ${column((r) => r.payTo)}, ${column((r) => r.amount)}, ${column((r) => r.claimant)})
            with ordinality as v(network, tx, log_index, asset, payer, nonce, pay_to, amount, claimant, n)
          order by v.n`,
      )
      .onConflictDoNothing()
      .returning({ network: chainPaymentUses.network, transactionHash: chainPaymentUses.transactionHash, logIndex: chainPaymentUses.logIndex, claimant: chainPaymentUses.claimant });
    const mine = new Set(inserted.map(useKey));
    // Not inserted: held already, by this claimant (a retry) or by something else.
    return Promise.all(rows.map(async (row) => mine.has(useKey(row)) || (await this.holder(row, db)) === row.claimant));
  }

  /** Whether `claimant` holds a transfer of this transaction (the primary key's prefix: no chain read needed). */
  async heldIn(network: string, transactionHash: string, claimant: string): Promise<boolean> {
    const rows = await this.db
      .select({ logIndex: chainPaymentUses.logIndex })
      .from(chainPaymentUses)
      .where(and(eq(chainPaymentUses.network, network), eq(chainPaymentUses.transactionHash, transactionHash.toLowerCase()), eq(chainPaymentUses.claimant, claimant)))
      .limit(1);
    return rows.length === 1;
  }

  /** Who holds the payment, or null while nobody does. */
  async holder(use: Pick<PaymentUse, 'network' | 'transactionHash' | 'logIndex'>, db: Executor = this.db): Promise<string | null> {
    const rows = await db
      .select({ claimant: chainPaymentUses.claimant })
      .from(chainPaymentUses)
      .where(and(eq(chainPaymentUses.network, use.network), eq(chainPaymentUses.transactionHash, use.transactionHash.toLowerCase()), eq(chainPaymentUses.logIndex, use.logIndex)));
    return rows[0]?.claimant ?? null;
  }
}

const useKey = (row: { network: string; transactionHash: string; logIndex: number; claimant: string }) =>
  `${row.network}|${row.transactionHash}|${row.logIndex}|${row.claimant}`;
