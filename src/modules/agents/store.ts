import { and, asc, desc, eq, isNull, lte, sql } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { agentInstances, agentProviderKeys, agents, type ModelProvider } from './tables.js';

export type AgentRow = typeof agents.$inferSelect;
export type InstanceRow = typeof agentInstances.$inferSelect;
export type ProviderKeyRow = typeof agentProviderKeys.$inferSelect;

/** Every statement on the agents tables; each move of an agent names the status it expects. */
export class AgentsStore {
  constructor(private readonly db: Executor) {}

  async insert(executor: Executor, row: typeof agents.$inferInsert): Promise<AgentRow> {
    const [created] = await executor.insert(agents).values(row).returning();
    return created!;
  }

  async byId(id: string): Promise<AgentRow | null> {
    const [row] = await this.db.select().from(agents).where(eq(agents.id, id));
    return row ?? null;
  }

  async listByUser(userId: string): Promise<Array<{ agent: AgentRow; instance: InstanceRow | null }>> {
    return this.db
      .select({ agent: agents, instance: agentInstances })
      .from(agents)
      .leftJoin(agentInstances, eq(agentInstances.agentId, agents.id))
      .where(eq(agents.userId, userId))
      .orderBy(desc(agents.createdAt), desc(agents.id));
  }

  async instanceOf(agentId: string): Promise<InstanceRow | null> {
    const [row] = await this.db.select().from(agentInstances).where(eq(agentInstances.agentId, agentId));
    return row ?? null;
  }

  /**
   * The deployer's claim: the oldest pending agent whose next try is due, counted as an attempt and pushed
   * `retryMs` ahead, so a deployer that dies mid-deploy leaves it to be tried again then. SKIP LOCKED: two
   * deployers never take the same agent.
   */
  async claimDue(now: Date, retryMs: number): Promise<AgentRow | null> {
    const [row] = await this.db
      .update(agents)
      .set({ attempts: sql`${agents.attempts} + 1`, nextAttemptAt: new Date(now.getTime() + retryMs), updatedAt: now })
      .where(
        eq(
          agents.id,
          sql`(select id from agents where status = 'pending' and next_attempt_at <= ${now} order by next_attempt_at limit 1 for update skip locked)`,
        ),
      )
      .returning();
    return row ?? null;
  }

  /** pending → running with its instance (made on the first deploy, re-pointed on later ones). */
  async markRunning(executor: Executor, agentId: string, instance: InstanceRow, now: Date): Promise<boolean> {
    await this.saveInstance(executor, instance);
    const moved = await executor
      .update(agents)
      .set({ status: 'running', lastError: null, nextAttemptAt: null, updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.status, 'pending')))
      .returning({ id: agents.id });
    return moved.length === 1;
  }

  /** The instance row: inserted once per agent, then its address and machine follow each (re)start. */
  async saveInstance(executor: Executor, instance: InstanceRow): Promise<void> {
    await executor
      .insert(agentInstances)
      .values(instance)
      .onConflictDoUpdate({
        target: agentInstances.agentId,
        set: { url: instance.url, machineRef: instance.machineRef, volumeRef: instance.volumeRef, updatedAt: instance.updatedAt },
      });
  }

  /** A failed try: the error kept; after the last try, pending → failed. */
  async recordFailure(executor: Executor, agentId: string, error: string, giveUp: boolean, now: Date): Promise<boolean> {
    const moved = await executor
      .update(agents)
      .set({ lastError: error.slice(0, 1000), ...(giveUp ? { status: 'failed' as const, nextAttemptAt: null } : {}), updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.status, 'pending')))
      .returning({ id: agents.id });
    return moved.length === 1;
  }

  /** Running agents and their instances (the runtime sweep: expiry, and restarting runtimes that stopped). */
  async running(limit: number): Promise<Array<{ agent: AgentRow; instance: InstanceRow }>> {
    return this.db
      .select({ agent: agents, instance: agentInstances })
      .from(agents)
      .innerJoin(agentInstances, eq(agentInstances.agentId, agents.id))
      .where(and(eq(agents.status, 'running'), isNull(agentInstances.stoppedAt)))
      .orderBy(asc(agentInstances.expiresAt))
      .limit(limit);
  }

  /** running → expired, the instance stopped. */
  async markExpired(agentId: string, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const moved = await tx
        .update(agents)
        .set({ status: 'expired', updatedAt: now })
        .where(and(eq(agents.id, agentId), eq(agents.status, 'running')))
        .returning({ id: agents.id });
      if (moved.length === 0) return false;
      await tx.update(agentInstances).set({ stoppedAt: now, updatedAt: now }).where(eq(agentInstances.agentId, agentId));
      return true;
    });
  }

  /** Stopped instances whose volume is due for removal. */
  async dueForRemoval(stoppedBefore: Date, limit: number): Promise<InstanceRow[]> {
    return this.db
      .select()
      .from(agentInstances)
      .where(and(lte(agentInstances.stoppedAt, stoppedBefore), isNull(agentInstances.removedAt)))
      .orderBy(asc(agentInstances.stoppedAt))
      .limit(limit);
  }

  async markRemoved(instanceId: string, now: Date): Promise<void> {
    await this.db.update(agentInstances).set({ removedAt: now, updatedAt: now }).where(and(eq(agentInstances.id, instanceId), isNull(agentInstances.removedAt)));
  }

  async setTokenBudget(agentId: string, dailyTokens: number, now: Date): Promise<void> {
    await this.db.update(agents).set({ dailyTokenBudget: dailyTokens, updatedAt: now }).where(eq(agents.id, agentId));
  }

  // runtime_b's wallet and payment budget.

  async setWallet(agentId: string, walletId: string, credentialId: string, now: Date): Promise<void> {
    await this.db.update(agents).set({ walletId, walletCredentialId: credentialId, updatedAt: now }).where(and(eq(agents.id, agentId), isNull(agents.walletId)));
  }

  /** False when the new budget is below what was already spent (the CHECK would refuse it anyway). */
  async setPaymentBudget(agentId: string, budget: bigint, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(agents)
      .set({ paymentBudget: budget.toString(), updatedAt: now })
      .where(and(eq(agents.id, agentId), sql`${agents.paymentSpent} <= ${budget.toString()}::numeric`))
      .returning({ id: agents.id });
    return moved.length === 1;
  }

  /** Holds `amount` of the budget for one payment; false (nothing held) when the budget has less left. */
  async reservePayment(agentId: string, amount: bigint): Promise<boolean> {
    const held = await this.db
      .update(agents)
      .set({ paymentSpent: sql`${agents.paymentSpent} + ${amount.toString()}::numeric` })
      .where(and(eq(agents.id, agentId), sql`${agents.paymentSpent} + ${amount.toString()}::numeric <= ${agents.paymentBudget}`))
      .returning({ id: agents.id });
    return held.length === 1;
  }

  /** Gives back the part of a hold that was not paid. */
  async releasePayment(agentId: string, amount: bigint): Promise<void> {
    if (amount <= 0n) return;
    await this.db.update(agents).set({ paymentSpent: sql`${agents.paymentSpent} - ${amount.toString()}::numeric` }).where(eq(agents.id, agentId));
  }

  // Model-provider keys (sealed by the service before they get here).

  async saveProviderKey(row: ProviderKeyRow): Promise<void> {
    await this.db
      .insert(agentProviderKeys)
      .values(row)
      .onConflictDoUpdate({ target: [agentProviderKeys.agentId, agentProviderKeys.provider], set: { sealedKey: row.sealedKey, keyHint: row.keyHint, updatedAt: row.updatedAt } });
  }

  /** The agent's keys, the most recently set first (that one answers chats). */
  providerKeys(agentId: string): Promise<ProviderKeyRow[]> {
    return this.db.select().from(agentProviderKeys).where(eq(agentProviderKeys.agentId, agentId)).orderBy(desc(agentProviderKeys.updatedAt), asc(agentProviderKeys.provider));
  }

  async providerKey(agentId: string, provider: ModelProvider): Promise<ProviderKeyRow | null> {
    const [row] = await this.db.select().from(agentProviderKeys).where(and(eq(agentProviderKeys.agentId, agentId), eq(agentProviderKeys.provider, provider)));
    return row ?? null;
  }
}
