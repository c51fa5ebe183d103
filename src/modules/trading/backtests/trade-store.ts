import { and, asc, eq, sql } from 'drizzle-orm';
import type { Db } from '../../../platform/db.js';
import type { OrderSummary } from '../engine/engine.js';
import { tradingExecutions } from '../tables.js';
import { reasonOf, type TradeFill } from './trade-list.js';

/** The fills a runtime's trade list is made of (trade-list.ts): its executions whose order filled. */
export class TradeStore {
  constructor(private readonly db: Db) {}

  /**
   * Every filled order of the runtime, in the order its book took them: by tick, and within a tick by leg (the
   * order they were placed). Its book started empty, so these are all its trades.
   */
  async fills(runtimeId: string): Promise<TradeFill[]> {
    const rows = await this.db
      .select({ scheduledAt: tradingExecutions.scheduledAt, decision: tradingExecutions.decision, order: tradingExecutions.order })
      .from(tradingExecutions)
      .where(and(eq(tradingExecutions.runtimeId, runtimeId), eq(tradingExecutions.status, 'completed'), sql`${tradingExecutions.order}->>'status' = 'filled'`))
      .orderBy(asc(tradingExecutions.scheduledAt), asc(tradingExecutions.leg), asc(tradingExecutions.id));
    return rows.map((row) => {
      const order = row.order as OrderSummary;
      return { at: row.scheduledAt.toISOString(), symbol: order.symbol, side: order.side, size: order.size, price: order.price!, feeUsd: order.feeUsd ?? 0, reason: reasonOf(row.decision as Record<string, unknown> | null) };
    });
  }
}
