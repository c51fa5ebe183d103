import { and, asc, desc, eq, gt, isNotNull, lt, lte, sql } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';
import type { Db } from '../../platform/db.js';
import type { ChainFilter } from './query.js';
import { indexedPayments as p } from './tables.js';

// Only what a record shows: fewer columns to fetch and parse on the hot read path.
const columns = {
  chainId: p.chainId,
  token: p.token,
  paymentId: p.paymentId,
  payer: p.payer,
  recipient: p.recipient,
  value: p.value,
  authorizationNonce: p.authorizationNonce,
  transactionHash: p.transactionHash,
  logIndex: p.logIndex,
  blockNumber: p.blockNumber,
  blockTimestamp: p.blockTimestamp,
  facilitator: p.facilitator,
  recipientSequence: p.recipientSequence,
  signature: p.signature,
  signer: p.signer,
};

type Selected = { [K in keyof typeof columns]: (typeof p.$inferSelect)[K] };
export type PublishedRow = Selected & { recipientSequence: number; signature: string; signer: string };

const published = isNotNull(p.recipientSequence);

const ph = (name: string) => sql.placeholder(name);

/** Where a published record stands in the newest-first orders; `before` resumes a listing after it. */
export interface Position {
  id: number;
  chainId: number;
  recipient: string;
  blockTimestamp: number;
  blockNumber: number;
  logIndex: number;
  recipientSequence: number;
}

/**
 * `(columns) < (position)` over a newest-first order, for the cursor `before`. The order ends with the row's
 * id, so two records never tie and a cursor is a point between records, not a page number: records
 * published above it later do not push it (nothing repeats), and nothing below it moves (nothing is skipped).
 * PostgreSQL bounds the backward index scan with the row comparison's indexed prefix (EXPLAIN: Index Cond
 * `ROW(block_number, log_index) <= …`, then an incremental sort on the id), so a cursor costs one page at any depth.
 */
function olderThan(order: readonly [string, PgColumn][]) {
  const columns = sql.join(order.map(([, column]) => sql`${column}`), sql`, `);
  const values = sql.join(order.map(([name]) => sql`${ph(name)}`), sql`, `);
  return sql`(${columns}) < (${values})`;
}

/** The newest-first order of one chain (block, log, id) and across chains (time first); each ends with the id. */
const chainOrder: [string, PgColumn][] = [
  ['blockNumber', p.blockNumber],
  ['logIndex', p.logIndex],
  ['id', p.id],
];
const timeOrder: [string, PgColumn][] = [['blockTimestamp', p.blockTimestamp], ['chainId', p.chainId], ...chainOrder];

/**
 * Reads of published records only; each query shape is served by one index (see tables.ts) and is a
 * named prepared statement, so PostgreSQL plans it once per connection instead of per request.
 */
export class TransactionStore {
  private readonly cursor;
  private readonly pages;
  private readonly afterRecord;
  private readonly byId;
  private readonly byTransaction;
  private readonly position;

  constructor(db: Db) {
    const select = () => db.select(columns).from(p);
    const window = { offset: ph('offset'), limit: ph('limit') };
    const byChain = chainOrder.map(([, column]) => desc(column));
    const newest = timeOrder.map(([, column]) => desc(column));
    const ofChainRecipient = and(published, eq(p.chainId, ph('chainId')), eq(p.recipient, ph('recipient')));
    const ofChain = and(published, eq(p.chainId, ph('chainId')));
    const ofRecipient = and(published, eq(p.recipient, ph('recipient')));
    this.cursor = select()
      .where(and(eq(p.chainId, ph('chainId')), eq(p.recipient, ph('recipient')), gt(p.recipientSequence, ph('after')), lte(p.recipientSequence, ph('until'))))
      .orderBy(asc(p.recipientSequence))
      .prepare('txapi_cursor');
    this.pages = {
      chainRecipient: select().where(ofChainRecipient).orderBy(desc(p.recipientSequence)).offset(window.offset).limit(window.limit).prepare('txapi_page_chain_recipient'),
      chain: select().where(ofChain).orderBy(...byChain).offset(window.offset).limit(window.limit).prepare('txapi_page_chain'),
      recipient: select().where(ofRecipient).orderBy(...newest).offset(window.offset).limit(window.limit).prepare('txapi_page_recipient'),
      all: select().where(published).orderBy(...newest).offset(window.offset).limit(window.limit).prepare('txapi_page_all'),
    };
    // The same four orders, resumed after a record (`before`) instead of at an offset.
    this.afterRecord = {
      chainRecipient: select()
        .where(and(ofChainRecipient, lt(p.recipientSequence, ph('recipientSequence'))))
        .orderBy(desc(p.recipientSequence))
        .limit(window.limit)
        .prepare('txapi_older_chain_recipient'),
      chain: select().where(and(ofChain, olderThan(chainOrder))).orderBy(...byChain).limit(window.limit).prepare('txapi_older_chain'),
      recipient: select().where(and(ofRecipient, olderThan(timeOrder))).orderBy(...newest).limit(window.limit).prepare('txapi_older_recipient'),
      all: select().where(and(published, olderThan(timeOrder))).orderBy(...newest).limit(window.limit).prepare('txapi_older_all'),
    };
    this.byId = select().where(and(eq(p.paymentId, ph('paymentId')), published)).prepare('txapi_by_payment_id');
    this.byTransaction = select()
      .where(and(eq(p.transactionHash, ph('transactionHash')), published))
      .orderBy(asc(p.chainId), asc(p.logIndex))
      .prepare('txapi_by_transaction');
    this.position = db
      .select({
        id: p.id,
        chainId: p.chainId,
        recipient: p.recipient,
        blockTimestamp: p.blockTimestamp,
        blockNumber: p.blockNumber,
        logIndex: p.logIndex,
        recipientSequence: p.recipientSequence,
      })
      .from(p)
      .where(and(eq(p.paymentId, ph('paymentId')), published))
      .prepare('txapi_position');
  }

  /** Newest first: by sequence for one recipient on one chain, else by block (and, across chains, time). */
  async page(chain: ChainFilter, recipient: string | null, offset: number, limit: number): Promise<PublishedRow[]> {
    const window = { offset, limit };
    const rows =
      chain === 'all'
        ? recipient
          ? await this.pages.recipient.execute({ recipient, ...window })
          : await this.pages.all.execute(window)
        : recipient
          ? await this.pages.chainRecipient.execute({ chainId: chain, recipient, ...window })
          : await this.pages.chain.execute({ chainId: chain, ...window });
    return rows as PublishedRow[];
  }

  /** The same orders as page, the records after `position` (which the caller checked is in the listing). */
  async after(chain: ChainFilter, recipient: string | null, position: Position, limit: number): Promise<PublishedRow[]> {
    const { id, chainId, blockTimestamp, blockNumber, logIndex, recipientSequence } = position;
    const at = { id, chainId, blockTimestamp, blockNumber, logIndex, limit };
    const rows =
      chain === 'all'
        ? recipient
          ? await this.afterRecord.recipient.execute({ recipient, ...at })
          : await this.afterRecord.all.execute(at)
        : recipient
          ? await this.afterRecord.chainRecipient.execute({ chainId, recipient, recipientSequence, limit })
          : await this.afterRecord.chain.execute(at);
    return rows as PublishedRow[];
  }

  /** Where a published record stands (null: unknown or not published yet). */
  async positionOf(paymentId: string): Promise<Position | null> {
    const [row] = await this.position.execute({ paymentId });
    return (row as Position | undefined) ?? null;
  }

  /** The published payments one transaction carried, in log order (usually one; a batch carries several). */
  async inTransaction(transactionHash: string): Promise<PublishedRow[]> {
    return (await this.byTransaction.execute({ transactionHash })) as PublishedRow[];
  }

  /**
   * The cursor batch: sequences after+1 .. after+limit, cut at the first gap. Bounded to that range
   * so a gap never lets a later record through.
   */
  async afterSequence(chainId: number, recipient: string, after: number, limit: number): Promise<PublishedRow[]> {
    const rows = (await this.cursor.execute({ chainId, recipient, after, until: after + limit })) as PublishedRow[];
    const contiguous: PublishedRow[] = [];
    for (const row of rows) {
      if (row.recipientSequence !== after + contiguous.length + 1) break;
      contiguous.push(row);
    }
    return contiguous;
  }

  async byPaymentId(paymentId: string): Promise<PublishedRow | null> {
    const [row] = await this.byId.execute({ paymentId });
    return (row as PublishedRow | undefined) ?? null;
  }
}
