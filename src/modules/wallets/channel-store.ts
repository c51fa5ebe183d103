import type { BatchSettlementClientContext, ClientChannelStorage } from '@x402/evm/batch-settlement/client';
import { and, asc, desc, eq, inArray, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../platform/db.js';
import { walletChannels, walletPayments } from './tables.js';
import { OPEN_PAYMENT_STATES, type PaymentRow } from './store.js';

export type ChannelRow = typeof walletChannels.$inferSelect;

/** The scheme name of a voucher's (or a deposit's) payment row. */
export const BATCH_SCHEME = 'batch-settlement';

/** A voucher payment's row nonce: unique per wallet, so one cumulative amount of a channel is one row. */
export const voucherNonce = (channelId: string, cumulative: bigint) => `${channelId.toLowerCase()}:${cumulative}`;

/**
 * Every statement on wallet_channels. The concurrency argument, once: a channel's vouchers are signed only by the
 * holder of its lease (`lease_id`, until `lease_until` on the database's clock), taken by one conditional UPDATE
 * that matches only a free or lapsed lease; every write of the client's state names the lease, so a holder whose
 * lease lapsed (a node that hung past it) writes nothing. Two calls on one channel therefore sign one after the
 * other, each on the base the previous one left.
 */
export class ChannelStore {
  constructor(private readonly db: Db) {}

  /** The wallet's row of this on-chain channel, created on first use (a concurrent creator's row wins). */
  async ensure(row: Omit<ChannelRow, 'status' | 'balance' | 'chargedCumulative' | 'signedMax' | 'context' | 'leaseId' | 'leaseUntil'>): Promise<ChannelRow> {
    await this.db
      .insert(walletChannels)
      .values({ ...row, status: 'open' })
      .onConflictDoNothing();
    return (await this.byChannelId(row.walletId, row.channelId))!;
  }

  async byChannelId(walletId: string, channelId: string): Promise<ChannelRow | undefined> {
    const [row] = await this.db.select().from(walletChannels).where(and(eq(walletChannels.walletId, walletId), eq(walletChannels.channelId, channelId.toLowerCase())));
    return row;
  }

  /** The wallet's channel by our id or by its on-chain id; another wallet's is undefined. */
  async ofWallet(walletId: string, id: string): Promise<ChannelRow | undefined> {
    const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
    if (!isUuid) return /^0x[0-9a-fA-F]{64}$/.test(id) ? this.byChannelId(walletId, id) : undefined;
    const [row] = await this.db.select().from(walletChannels).where(and(eq(walletChannels.walletId, walletId), eq(walletChannels.id, id)));
    return row;
  }

  async list(walletId: string): Promise<ChannelRow[]> {
    return this.db.select().from(walletChannels).where(eq(walletChannels.walletId, walletId)).orderBy(desc(walletChannels.id)).limit(100);
  }

  /** Takes the channel's lease for `seconds` (database time) when it is free or lapsed; undefined when another holds it. */
  async acquire(id: string, leaseId: string, seconds: number): Promise<ChannelRow | undefined> {
    const [row] = await this.db
      .update(walletChannels)
      .set({ leaseId, leaseUntil: sql`now() + make_interval(secs => ${seconds})` })
      .where(and(eq(walletChannels.id, id), or(isNull(walletChannels.leaseId), lt(walletChannels.leaseUntil, sql`now()`))))
      .returning();
    return row;
  }

  async release(id: string, leaseId: string): Promise<void> {
    await this.db.update(walletChannels).set({ leaseId: null, leaseUntil: null }).where(and(eq(walletChannels.id, id), eq(walletChannels.leaseId, leaseId)));
  }

  async get(id: string): Promise<ChannelRow | undefined> {
    const [row] = await this.db.select().from(walletChannels).where(eq(walletChannels.id, id));
    return row;
  }

  /** Records, before signing, that the wallet is about to sign `cumulative` (the most the seller could claim). */
  async raiseSignedMax(id: string, leaseId: string, cumulative: bigint, now: Date): Promise<boolean> {
    const rows = await this.db
      .update(walletChannels)
      .set({ signedMax: sql`greatest(${walletChannels.signedMax}, ${cumulative.toString()}::numeric)`, status: 'open', updatedAt: now })
      .where(and(eq(walletChannels.id, id), eq(walletChannels.leaseId, leaseId)))
      .returning({ id: walletChannels.id });
    return rows.length === 1;
  }

  /** The channel's state after a cooperative refund or a read of the chain (close.ts). */
  async closed(id: string, leaseId: string, state: { balance: bigint; totalClaimed: bigint }, now: Date): Promise<void> {
    await this.db
      .update(walletChannels)
      .set({ status: 'closed', balance: state.balance.toString(), chargedCumulative: state.totalClaimed.toString(), context: { totalClaimed: state.totalClaimed.toString() }, updatedAt: now })
      .where(and(eq(walletChannels.id, id), eq(walletChannels.leaseId, leaseId)));
  }

  /**
   * The official client's ClientChannelStorage on this row, writable only under `leaseId`: `chargedCumulativeAmount`
   * and `balance` are columns (the base of the next voucher survives a restart); the recovery fields are in
   * `context`. A record without a balance reads as none, so the client recovers it from the chain.
   */
  storage(id: string, leaseId: string, clock: () => Date): ClientChannelStorage {
    return {
      get: async () => {
        const row = await this.get(id);
        if (!row || row.balance === null) return undefined;
        return { ...(row.context ?? {}), chargedCumulativeAmount: row.chargedCumulative, balance: row.balance } as BatchSettlementClientContext;
      },
      set: async (_key, context) => {
        const { chargedCumulativeAmount, balance, ...rest } = context;
        await this.db
          .update(walletChannels)
          .set({
            chargedCumulative: chargedCumulativeAmount ?? '0',
            balance: balance ?? null,
            context: rest as Record<string, string>,
            updatedAt: clock(),
          })
          .where(and(eq(walletChannels.id, id), eq(walletChannels.leaseId, leaseId)));
      },
      // The client drops a record a refund emptied: the next use recovers it from the chain.
      delete: async () => {
        await this.db
          .update(walletChannels)
          .set({ balance: null, context: null, updatedAt: clock() })
          .where(and(eq(walletChannels.id, id), eq(walletChannels.leaseId, leaseId)));
      },
    };
  }

  /** The channel's open voucher payments, lowest cumulative first. */
  async openVouchers(walletId: string, channelId: string): Promise<PaymentRow[]> {
    return this.db
      .select()
      .from(walletPayments)
      .where(
        and(
          eq(walletPayments.walletId, walletId),
          eq(walletPayments.scheme, BATCH_SCHEME),
          inArray(walletPayments.status, [...OPEN_PAYMENT_STATES]),
          sql`${walletPayments.nonce} like ${`${channelId.toLowerCase()}:%`}`,
        ),
      )
      .orderBy(asc(walletPayments.createdAt));
  }

  async voucherPayment(walletId: string, nonce: string): Promise<PaymentRow | undefined> {
    const [row] = await this.db.select().from(walletPayments).where(and(eq(walletPayments.walletId, walletId), eq(walletPayments.nonce, nonce)));
    return row;
  }

  /** The highest cumulative amount of the channel's vouchers the seller confirmed (0 when none). */
  async highestSettled(walletId: string, channelId: string): Promise<bigint> {
    const [row] = await this.db
      .select({ top: sql<string | null>`max(split_part(${walletPayments.nonce}, ':', 2)::numeric)::text` })
      .from(walletPayments)
      .where(and(eq(walletPayments.walletId, walletId), eq(walletPayments.scheme, BATCH_SCHEME), eq(walletPayments.status, 'settled'), sql`${walletPayments.nonce} like ${`${channelId.toLowerCase()}:%`}`));
    return BigInt(row?.top ?? '0');
  }

  /**
   * An earlier open voucher of the same cumulative amount (its answer was lost): it moves aside under another nonce,
   * still open, so the new one can be recorded; which of the two the seller took is decided afterwards by its base.
   */
  async setVoucherAside(id: string, nonce: string, now: Date): Promise<void> {
    await this.db
      .update(walletPayments)
      .set({ nonce: `${nonce}:aside:${id}`, error: 'its answer was lost; the same cumulative amount was signed again', updatedAt: now })
      .where(and(eq(walletPayments.id, id), inArray(walletPayments.status, [...OPEN_PAYMENT_STATES])));
  }
}
