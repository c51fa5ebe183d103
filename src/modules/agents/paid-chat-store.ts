import { and, eq } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { agentChatPrices, agentPaidTurns } from './tables.js';

export type ChatPriceRow = typeof agentChatPrices.$inferSelect;
export type PaidTurnRow = typeof agentPaidTurns.$inferSelect;

/** A permit as x402_paid_requests keys it: network, asset (Permit2), payer, nonce. */
export interface PermitKey {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
}

const byKey = (key: PermitKey) => and(eq(agentPaidTurns.network, key.network), eq(agentPaidTurns.asset, key.asset), eq(agentPaidTurns.payer, key.payer), eq(agentPaidTurns.nonce, key.nonce));

/**
 * Every statement on agent_chat_prices and agent_paid_turns. A paid turn is inserted once per permit (its key is the
 * primary key: a second request with the same permit finds it) and ends once: each end names `running`.
 */
export class PaidChatStore {
  constructor(private readonly db: Executor) {}

  async price(agentId: string): Promise<ChatPriceRow | null> {
    const [row] = await this.db.select().from(agentChatPrices).where(eq(agentChatPrices.agentId, agentId));
    return row ?? null;
  }

  async setPrice(row: ChatPriceRow): Promise<ChatPriceRow> {
    const { agentId: _agentId, ...terms } = row;
    const [saved] = await this.db.insert(agentChatPrices).values(row).onConflictDoUpdate({ target: agentChatPrices.agentId, set: terms }).returning();
    return saved!;
  }

  async deletePrice(agentId: string): Promise<boolean> {
    return (await this.db.delete(agentChatPrices).where(eq(agentChatPrices.agentId, agentId)).returning({ agentId: agentChatPrices.agentId })).length === 1;
  }

  /** Whether a chat turn is one sold per token. */
  async isPaidTurn(turnId: string): Promise<boolean> {
    return (await this.db.select({ turnId: agentPaidTurns.turnId }).from(agentPaidTurns).where(eq(agentPaidTurns.turnId, turnId)).limit(1)).length === 1;
  }

  async find(key: PermitKey): Promise<PaidTurnRow | null> {
    const [row] = await this.db.select().from(agentPaidTurns).where(byKey(key));
    return row ?? null;
  }

  /** The permit's turn, before it begins; null when the permit already has one (the caller reads it). */
  async open(row: Omit<PaidTurnRow, 'status' | 'tokens' | 'amount' | 'answer' | 'createdAt' | 'updatedAt'>, now: Date): Promise<PaidTurnRow | null> {
    const [inserted] = await this.db
      .insert(agentPaidTurns)
      .values({ ...row, status: 'running', tokens: null, amount: null, answer: null, createdAt: now, updatedAt: now })
      .onConflictDoNothing()
      .returning();
    return inserted ?? null;
  }

  /** running → completed with its tokens, the amount they cost and the answer: inside the transaction that completes the chat turn. */
  async complete(tx: Executor, key: PermitKey, end: { tokens: number; amount: bigint; answer: unknown }, now: Date): Promise<boolean> {
    const moved = await tx
      .update(agentPaidTurns)
      .set({ status: 'completed', tokens: end.tokens, amount: end.amount.toString(), answer: end.answer, updatedAt: now })
      .where(and(byKey(key), eq(agentPaidTurns.status, 'running')))
      .returning({ nonce: agentPaidTurns.nonce });
    return moved.length === 1;
  }

  /** running → failed with the error its buyer is answered; it costs nothing. */
  async fail(key: PermitKey, answer: unknown, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(agentPaidTurns)
      .set({ status: 'failed', amount: '0', answer, updatedAt: now })
      .where(and(byKey(key), eq(agentPaidTurns.status, 'running')))
      .returning({ nonce: agentPaidTurns.nonce });
    return moved.length === 1;
  }
}
