import { and, asc, desc, eq, gt, isNotNull, lte, sql } from 'drizzle-orm';
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

/**
 * Reads of published records only; each query shape is served by one index (see tables.ts) and is a
 * named prepared statement, so PostgreSQL plans it once per connection instead of per request.
 */
export class TransactionStore {
  private readonly cursor;
  private readonly pages;
  private readonly byId;

  constructor(db: Db) {
    const select = () => db.select(columns).from(p);
    const window = { offset: ph('offset'), limit: ph('limit') };
    const newest = [desc(p.blockTimestamp), desc(p.chainId), desc(p.blockNumber), desc(p.logIndex)];
    this.cursor = select()
      .where(and(eq(p.chainId, ph('chainId')), eq(p.recipient, ph('recipient')), gt(p.recipientSequence, ph('after')), lte(p.recipientSequence, ph('until'))))
      .orderBy(asc(p.recipientSequence))
      .prepare('txapi_cursor');
    this.pages = {
      chainRecipient: select()
        .where(and(published, eq(p.chainId, ph('chainId')), eq(p.recipient, ph('recipient'))))
        .orderBy(desc(p.recipientSequence))
        .offset(window.offset)
        .limit(window.limit)
        .prepare('txapi_page_chain_recipient'),
      chain: select()
        .where(and(published, eq(p.chainId, ph('chainId'))))
        .orderBy(desc(p.blockNumber), desc(p.logIndex))
        .offset(window.offset)
        .limit(window.limit)
        .prepare('txapi_page_chain'),
      recipient: select()
        .where(and(published, eq(p.recipient, ph('recipient'))))
        .orderBy(...newest)
        .offset(window.offset)
        .limit(window.limit)
        .prepare('txapi_page_recipient'),
      all: select().where(published).orderBy(...newest).offset(window.offset).limit(window.limit).prepare('txapi_page_all'),
    };
    this.byId = select().where(and(eq(p.paymentId, ph('paymentId')), published)).prepare('txapi_by_payment_id');
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
