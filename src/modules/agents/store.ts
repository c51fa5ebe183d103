import { and, asc, desc, eq, gt, inArray, isNotNull, isNull, lte, ne, sql, type SQL } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { ChatStore } from './chat-store.js';
import { agentInstances, agentPaymentHolds, agentProviderKeys, agents, agentWithdrawals, type AgentStatus, type BotSettings, type ModelProvider } from './tables.js';

export type AgentRow = typeof agents.$inferSelect;
export type InstanceRow = typeof agentInstances.$inferSelect;
export type ProviderKeyRow = typeof agentProviderKeys.$inferSelect;
export type HoldRow = typeof agentPaymentHolds.$inferSelect;

export const RUNTIME_LIFETIME_MS = 30 * 24 * 3600_000;

/** Every statement on the agents tables; each move of an agent names the status it expects. */
export class AgentsStore {
  constructor(private readonly db: Executor) {}

  async insert(executor: Executor, row: typeof agents.$inferInsert): Promise<AgentRow> {
    const [created] = await executor.insert(agents).values(row).returning();
    return created!;
  }

  async byId(id: string, db: Executor = this.db): Promise<AgentRow | null> {
    const [row] = await db.select().from(agents).where(eq(agents.id, id));
    return row ?? null;
  }

  async listByUser(userId: string): Promise<Array<{ agent: AgentRow; instance: InstanceRow | null }>> {
    return this.db
      .select({ agent: agents, instance: agentInstances })
      .from(agents)
      .leftJoin(agentInstances, eq(agentInstances.agentId, agents.id))
      .where(and(eq(agents.userId, userId), ne(agents.status, 'deleted')))
      .orderBy(desc(agents.createdAt), desc(agents.id));
  }

  async instanceOf(agentId: string, db: Executor = this.db): Promise<InstanceRow | null> {
    const [row] = await db.select().from(agentInstances).where(eq(agentInstances.agentId, agentId));
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

  /**
   * pending → running with its instance (made on the first deploy; on later ones its address, handles and
   * token follow the new runtime, and a stopped one runs again). False, and nothing saved, when the agent
   * left pending meanwhile (deleted): the caller stops what it started.
   */
  async markRunning(agentId: string, instance: InstanceRow, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const moved = await tx
        .update(agents)
        .set({ status: 'running', lastError: null, nextAttemptAt: null, updatedAt: now })
        .where(and(eq(agents.id, agentId), eq(agents.status, 'pending')))
        .returning({ id: agents.id });
      if (moved.length === 0) return false;
      await this.saveInstance(tx, { ...instance, stoppedAt: null, haltedAt: null, removeAt: null });
      return true;
    });
  }

  /** The instance row: inserted once per agent, then its address, handles, token and state follow each (re)start. */
  async saveInstance(executor: Executor, instance: InstanceRow): Promise<void> {
    const { url, machineRef, volumeRef, sealedToken, stoppedAt, haltedAt, removeAt, updatedAt } = instance;
    await executor
      .insert(agentInstances)
      .values(instance)
      .onConflictDoUpdate({ target: agentInstances.agentId, set: { url, machineRef, volumeRef, sealedToken, stoppedAt, haltedAt, removeAt, updatedAt } });
  }

  /** A running agent's runtime restarted by the supervisor: where it answers now and its new token (only while it is still running). */
  async restarted(agentId: string, instance: Pick<InstanceRow, 'url' | 'machineRef' | 'volumeRef' | 'sealedToken'>, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(agentInstances)
      .set({ url: instance.url, machineRef: instance.machineRef, volumeRef: instance.volumeRef, sealedToken: instance.sealedToken, updatedAt: now })
      .where(and(eq(agentInstances.agentId, agentId), isNull(agentInstances.stoppedAt), sql`exists (select 1 from agents where id = ${agentId} and status = 'running')`))
      .returning({ id: agentInstances.id });
    return moved.length === 1;
  }

  /** A failed try: the error kept; after the last try, pending → `then` (failed for a purchase, stopped for a restart). */
  async recordFailure(executor: Executor, agentId: string, error: string, then: AgentStatus | null, now: Date): Promise<boolean> {
    const moved = await executor
      .update(agents)
      .set({ lastError: error.slice(0, 1000), ...(then ? { status: then, nextAttemptAt: null } : {}), updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.status, 'pending')))
      .returning({ id: agents.id });
    // Back to stopped: whatever its last try started is halted again by the supervisor.
    if (moved.length === 1 && then === 'stopped') await executor.update(agentInstances).set({ haltedAt: null, updatedAt: now }).where(eq(agentInstances.agentId, agentId));
    return moved.length === 1;
  }

  /** A page of running agents and their instances, by agent id after `afterId` (the supervisor pages through all). */
  async runningPage(afterId: string | null, limit: number): Promise<Array<{ agent: AgentRow; instance: InstanceRow }>> {
    return this.db
      .select({ agent: agents, instance: agentInstances })
      .from(agents)
      .innerJoin(agentInstances, eq(agentInstances.agentId, agents.id))
      .where(and(eq(agents.status, 'running'), isNull(agentInstances.stoppedAt), afterId ? gt(agents.id, afterId) : undefined))
      .orderBy(asc(agents.id))
      .limit(limit);
  }

  /**
   * Moves an agent out of `from` into `to` and stops its instance (stoppedAt now, its volume kept until
   * `removeAt`), in one transaction; `when` adds a condition on the instance (e.g. its month is over).
   */
  async #stopInstance(agentId: string, from: AgentStatus[], to: AgentStatus, removeAt: SQL, now: Date, when?: SQL, lastError?: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // The instance first, as a renewal takes it (its expiry) before the agent: one lock order, and the
      // condition below reads the instance as the renewal left it.
      await tx.select({ id: agentInstances.id }).from(agentInstances).where(eq(agentInstances.agentId, agentId)).for('update');
      const moved = await tx
        .update(agents)
        .set({ status: to, updatedAt: now, ...(lastError === undefined ? {} : { lastError, nextAttemptAt: null }) })
        .where(and(eq(agents.id, agentId), inArray(agents.status, from), when ? sql`exists (select 1 from agent_instances i where i.agent_id = ${agentId} and ${when})` : undefined))
        .returning({ id: agents.id });
      if (moved.length === 0) return false;
      await tx
        .update(agentInstances)
        .set({ stoppedAt: sql`coalesce(${agentInstances.stoppedAt}, ${now})`, removeAt, updatedAt: now })
        .where(eq(agentInstances.agentId, agentId));
      return true;
    });
  }

  /** running → expired when its month is over (a renewal that moved expiresAt first wins); the volume is kept a week. */
  markExpired(agentId: string, now: Date): Promise<boolean> {
    return this.#stopInstance(agentId, ['running'], 'expired', sql`${agentInstances.expiresAt} + interval '7 days'`, now, sql`i.expires_at <= ${now}`);
  }

  /** running → stopped by its user: the runtime halts; the volume is kept until a week after the paid month. */
  markStopped(agentId: string, now: Date): Promise<boolean> {
    return this.#stopInstance(agentId, ['running'], 'stopped', sql`${agentInstances.expiresAt} + interval '7 days'`, now);
  }

  /** Any state → deleted: the runtime halts and its volume is removed at once. */
  markDeleted(agentId: string, now: Date): Promise<boolean> {
    return this.#stopInstance(agentId, ['pending', 'running', 'stopped', 'expired', 'failed', 'volume_lost'], 'deleted', sql`${now}`, now);
  }

  /** stopped → pending (deployed again on its volume) while its paid month lasts. */
  async markStarting(agentId: string, now: Date): Promise<boolean> {
    const moved = await this.db
      .update(agents)
      .set({ status: 'pending', attempts: 0, lastError: null, nextAttemptAt: now, updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.status, 'stopped'), sql`exists (select 1 from agent_instances i where i.agent_id = ${agentId} and i.expires_at > ${now} and i.removed_at is null)`))
      .returning({ id: agents.id });
    return moved.length === 1;
  }

  /**
   * One more month, inside the caller's transaction (with its payment): expiresAt moves a month past the later
   * of itself and now; an expired agent is deployed again on its volume; a stopped one keeps its volume a week
   * past the new end. The new expiry; null when the agent cannot be renewed (no runtime yet, or its data gone).
   */
  async renew(executor: Executor, agentId: string, now: Date): Promise<Date | null> {
    const [instance] = await executor
      .update(agentInstances)
      .set({
        expiresAt: sql`greatest(${agentInstances.expiresAt}, ${now}) + interval '30 days'`,
        removeAt: sql`case when ${agentInstances.stoppedAt} is null then null else greatest(${agentInstances.expiresAt}, ${now}) + interval '37 days' end`,
        updatedAt: now,
      })
      .where(
        and(
          eq(agentInstances.agentId, agentId),
          // Not one whose volume is due for removal (the supervisor may be removing it right now).
          isNull(agentInstances.removedAt),
          sql`(${agentInstances.removeAt} is null or ${agentInstances.removeAt} > ${now})`,
          sql`exists (select 1 from agents where id = ${agentId} and status in ('running', 'stopped', 'expired', 'pending'))`,
        ),
      )
      .returning({ expiresAt: agentInstances.expiresAt });
    if (!instance) return null;
    await executor
      .update(agents)
      .set({ status: 'pending', attempts: 0, lastError: null, nextAttemptAt: now, updatedAt: now })
      .where(and(eq(agents.id, agentId), eq(agents.status, 'expired')));
    return instance.expiresAt;
  }

  /** pending or running → volume_lost: its volume is gone, so it is not started on an empty one; its instance stops. */
  markVolumeLost(agentId: string, error: string, now: Date): Promise<boolean> {
    return this.#stopInstance(agentId, ['pending', 'running'], 'volume_lost', sql`${agentInstances.expiresAt} + interval '7 days'`, now, undefined, error);
  }

  /** Stopped instances whose runtime may still run (the supervisor halts them). */
  async unhalted(limit: number): Promise<InstanceRow[]> {
    return this.db
      .select()
      .from(agentInstances)
      // Not one being started again (pending) or running: its new runtime is the deployer's.
      .where(and(isNotNull(agentInstances.stoppedAt), isNull(agentInstances.haltedAt), sql`exists (select 1 from agents a where a.id = ${agentInstances.agentId} and a.status not in ('pending', 'running'))`))
      .orderBy(asc(agentInstances.stoppedAt))
      .limit(limit);
  }

  async markHalted(instanceId: string, stoppedAt: Date, now: Date): Promise<void> {
    // Only the stop it halted: a start since then (stoppedAt cleared) is left running.
    await this.db.update(agentInstances).set({ haltedAt: now, updatedAt: now }).where(and(eq(agentInstances.id, instanceId), eq(agentInstances.stoppedAt, stoppedAt)));
  }

  /** Stopped instances whose volume is due for removal. */
  async dueForRemoval(now: Date, limit: number): Promise<InstanceRow[]> {
    return this.db
      .select()
      .from(agentInstances)
      .where(and(lte(agentInstances.removeAt, now), isNull(agentInstances.removedAt)))
      .orderBy(asc(agentInstances.removeAt))
      .limit(limit);
  }

  /** The volume is gone: the instance says when, and the agent's chat histories go with it (one transaction). */
  async markRemoved(instance: InstanceRow, now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      const moved = await tx
        .update(agentInstances)
        .set({ removedAt: now, updatedAt: now })
        .where(and(eq(agentInstances.id, instance.id), isNull(agentInstances.removedAt), lte(agentInstances.removeAt, now)))
        .returning({ id: agentInstances.id });
      if (moved.length === 1) await new ChatStore(tx).deleteSessions(instance.agentId);
    });
  }

  async setConfig(agentId: string, config: { models?: AgentRow['models']; botSettings?: BotSettings | null }, now: Date): Promise<AgentRow | null> {
    const [row] = await this.db.update(agents).set({ ...config, updatedAt: now }).where(and(eq(agents.id, agentId), ne(agents.status, 'deleted'))).returning();
    return row ?? null;
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

  /**
   * Holds `amount` of the budget for one payment, recorded as a hold named by the payment's id; false (nothing
   * held) when the budget has less left. One transaction: the budget's conditional UPDATE and the hold's row.
   */
  async openHold(hold: { id: string; agentId: string; walletId: string; amount: bigint; turnId: string | null }, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const held = await tx
        .update(agents)
        .set({ paymentSpent: sql`${agents.paymentSpent} + ${hold.amount.toString()}::numeric` })
        .where(and(eq(agents.id, hold.agentId), sql`${agents.paymentSpent} + ${hold.amount.toString()}::numeric <= ${agents.paymentBudget}`))
        .returning({ id: agents.id });
      if (held.length === 0) return false;
      await tx.insert(agentPaymentHolds).values({ ...hold, amount: hold.amount.toString(), status: 'held', paid: null, createdAt: now, updatedAt: now });
      return true;
    });
  }

  /**
   * A held payment's end: `paid` of it spent (0n: released, nothing was or can be paid), the rest given back
   * to the budget, once (only a `held` hold moves, with the budget in the same transaction).
   */
  async closeHold(holdId: string, paid: bigint, now: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [hold] = await tx
        .update(agentPaymentHolds)
        .set({ status: paid > 0n ? 'spent' : 'released', paid: paid.toString(), updatedAt: now })
        .where(and(eq(agentPaymentHolds.id, holdId), eq(agentPaymentHolds.status, 'held')))
        .returning();
      if (!hold) return false;
      const unpaid = BigInt(hold.amount) - paid;
      if (unpaid !== 0n) await tx.update(agents).set({ paymentSpent: sql`${agents.paymentSpent} - ${unpaid.toString()}::numeric` }).where(eq(agents.id, hold.agentId));
      return true;
    });
  }

  /** A held payment signed for `amount`: the hold shrinks to it (the rest back to the budget) until its outcome is final. */
  async shrinkHold(holdId: string, amount: bigint, now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [before] = await tx.select().from(agentPaymentHolds).where(and(eq(agentPaymentHolds.id, holdId), eq(agentPaymentHolds.status, 'held'))).for('update');
      if (!before || BigInt(before.amount) <= amount) return;
      await tx.update(agentPaymentHolds).set({ amount: amount.toString(), updatedAt: now }).where(eq(agentPaymentHolds.id, holdId));
      await tx.update(agents).set({ paymentSpent: sql`${agents.paymentSpent} - ${(BigInt(before.amount) - amount).toString()}::numeric` }).where(eq(agents.id, before.agentId));
    });
  }

  /** A page of the holds still open, by id after `afterId` (the hold sweep pages through all). */
  openHolds(afterId: string | null, limit: number): Promise<HoldRow[]> {
    return this.db
      .select()
      .from(agentPaymentHolds)
      .where(and(eq(agentPaymentHolds.status, 'held'), afterId ? gt(agentPaymentHolds.id, afterId) : undefined))
      .orderBy(asc(agentPaymentHolds.id))
      .limit(limit);
  }

  /** The holds named by these payment ids (a tool payment's hold has its payment's id). */
  holdsByIds(ids: string[]): Promise<HoldRow[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.db.select().from(agentPaymentHolds).where(inArray(agentPaymentHolds.id, ids));
  }

  /** The holds opened by these turns' tool calls. */
  holdsOfTurns(turnIds: string[]): Promise<HoldRow[]> {
    return turnIds.length === 0 ? Promise.resolve([]) : this.db.select().from(agentPaymentHolds).where(inArray(agentPaymentHolds.turnId, turnIds)).orderBy(asc(agentPaymentHolds.createdAt), asc(agentPaymentHolds.id));
  }

  /** The agent's tool payments: how many were paid and how much, and what is still held. */
  async paymentTotals(agentId: string): Promise<{ count: number; spent: string; held: string }> {
    const [row] = await this.db
      .select({
        count: sql<number>`count(*) filter (where ${agentPaymentHolds.status} = 'spent')`.mapWith(Number),
        spent: sql<string>`coalesce(sum(${agentPaymentHolds.paid}) filter (where ${agentPaymentHolds.status} = 'spent'), 0)::text`,
        held: sql<string>`coalesce(sum(${agentPaymentHolds.amount}) filter (where ${agentPaymentHolds.status} = 'held'), 0)::text`,
      })
      .from(agentPaymentHolds)
      .where(eq(agentPaymentHolds.agentId, agentId));
    return row ?? { count: 0, spent: '0', held: '0' };
  }

  /** The withdrawal a key already names, if any (claims nothing). */
  async withdrawalByKey(agentId: string, idempotencyKey: string): Promise<typeof agentWithdrawals.$inferSelect | null> {
    const [named] = await this.db.select().from(agentWithdrawals).where(and(eq(agentWithdrawals.agentId, agentId), eq(agentWithdrawals.idempotencyKey, idempotencyKey)));
    return named ?? null;
  }

  /** The withdrawal a key names: the one just claimed, or the one it named first. */
  async withdrawalFor(row: typeof agentWithdrawals.$inferInsert): Promise<typeof agentWithdrawals.$inferSelect> {
    await this.db.insert(agentWithdrawals).values(row).onConflictDoNothing();
    return (await this.withdrawalByKey(row.agentId, row.idempotencyKey))!;
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

  /** Removes the agent's key for a provider; false when none was set. */
  async deleteProviderKey(agentId: string, provider: ModelProvider): Promise<boolean> {
    const deleted = await this.db.delete(agentProviderKeys).where(and(eq(agentProviderKeys.agentId, agentId), eq(agentProviderKeys.provider, provider))).returning({ provider: agentProviderKeys.provider });
    return deleted.length === 1;
  }

  async providerKey(agentId: string, provider: ModelProvider): Promise<ProviderKeyRow | null> {
    const [row] = await this.db.select().from(agentProviderKeys).where(and(eq(agentProviderKeys.agentId, agentId), eq(agentProviderKeys.provider, provider)));
    return row ?? null;
  }
}
