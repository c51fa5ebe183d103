// The x402_paid_requests statements (see tables.ts): each state change one conditional statement.
import { and, eq } from 'drizzle-orm';
import type { SettleResponse } from '@x402/core/types';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import { x402PaidRequests, type PaidRequestRow } from '../tables.js';

export interface PaidRequestKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

const byKey = (key: PaidRequestKey) =>
  and(eq(x402PaidRequests.network, key.network), eq(x402PaidRequests.asset, key.asset), eq(x402PaidRequests.payer, key.payer), eq(x402PaidRequests.nonce, key.nonce));

export class PaidRequests {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async find(key: PaidRequestKey): Promise<PaidRequestRow | null> {
    const [row] = await this.db.select().from(x402PaidRequests).where(byKey(key)).limit(1);
    return row ?? null;
  }

  /** Records the purchase before its settle; null when the authorization already has one (the caller reads it). */
  async open(row: Omit<PaidRequestRow, 'status' | 'settlement' | 'createdAt' | 'updatedAt'>): Promise<PaidRequestRow | null> {
    const now = this.clock.now();
    const [inserted] = await this.db
      .insert(x402PaidRequests)
      .values({ ...row, status: 'settling', settlement: null, createdAt: now, updatedAt: now })
      .onConflictDoNothing()
      .returning();
    return inserted ?? null;
  }

  /** settling → settled, once: true for the one call that moved it (it serves; others replay). */
  async settle(key: PaidRequestKey, settlement: SettleResponse): Promise<boolean> {
    const moved = await this.db
      .update(x402PaidRequests)
      .set({ status: 'settled', settlement, updatedAt: this.clock.now() })
      .where(and(byKey(key), eq(x402PaidRequests.status, 'settling')))
      .returning({ nonce: x402PaidRequests.nonce });
    return moved.length === 1;
  }

  /** A definitive refusal: nothing moved, so the authorization may be sent again. */
  async drop(key: PaidRequestKey): Promise<void> {
    await this.db.delete(x402PaidRequests).where(and(byKey(key), eq(x402PaidRequests.status, 'settling')));
  }
}
