import { and, asc, desc, eq, lt, or, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../platform/db.js';
import { tradingAccounts, tradingStrategies, tradingStrategyVersions, type KillSwitchMode } from './tables.js';

/** A page of a list, newest first: at most `limit` rows with ids below `before`. */
export interface Page {
  limit: number;
  before: string | null;
}

export type StrategyRow = typeof tradingStrategies.$inferSelect;
export type VersionRow = typeof tradingStrategyVersions.$inferSelect;
export type AccountRow = typeof tradingAccounts.$inferSelect;
export type NewVersion = Omit<VersionRow, 'number'>;

/** Statements on strategies, their versions and accounts. Versions are only ever inserted. */
export class CatalogStore {
  constructor(readonly db: Db) {}

  async createStrategy(strategy: StrategyRow, version: NewVersion): Promise<{ strategy: StrategyRow; version: VersionRow }> {
    return this.db.transaction(async (tx) => {
      const [created] = await tx.insert(tradingStrategies).values(strategy).returning();
      const [first] = await tx.insert(tradingStrategyVersions).values({ ...version, number: 1 }).returning();
      return { strategy: created!, version: first! };
    });
  }

  /**
   * The next version: the strategy's counter moves under its row lock, so concurrent publishers get
   * consecutive numbers. Null when the strategy is not the user's.
   */
  async publish(userId: string, version: NewVersion, now: Date): Promise<{ strategy: StrategyRow; version: VersionRow } | null> {
    return this.db.transaction(async (tx) => {
      const [strategy] = await tx
        .update(tradingStrategies)
        .set({ latestVersion: sql`${tradingStrategies.latestVersion} + 1`, updatedAt: now })
        .where(and(eq(tradingStrategies.id, version.strategyId), eq(tradingStrategies.userId, userId)))
        .returning();
      if (!strategy) return null;
      const [created] = await tx.insert(tradingStrategyVersions).values({ ...version, number: strategy.latestVersion }).returning();
      return { strategy, version: created! };
    });
  }

  /** Strategies the user may read: their own and public ones. */
  async visibleStrategies(userId: string, page: Page): Promise<StrategyRow[]> {
    return this.db
      .select()
      .from(tradingStrategies)
      .where(and(or(eq(tradingStrategies.userId, userId), eq(tradingStrategies.visibility, 'public')), page.before ? lt(tradingStrategies.id, page.before) : undefined))
      .orderBy(desc(tradingStrategies.id))
      .limit(page.limit);
  }

  /** The latest version of each strategy (a list shows no other). */
  async latestVersions(strategyIds: readonly string[]): Promise<VersionRow[]> {
    if (strategyIds.length === 0) return [];
    const rows = await this.db
      .select({ version: tradingStrategyVersions })
      .from(tradingStrategyVersions)
      .innerJoin(tradingStrategies, and(eq(tradingStrategies.id, tradingStrategyVersions.strategyId), eq(tradingStrategies.latestVersion, tradingStrategyVersions.number)))
      .where(sql`${tradingStrategies.id} = any(${sql.param([...strategyIds])}::uuid[])`);
    return rows.map((row) => row.version);
  }

  async strategy(id: string): Promise<StrategyRow | null> {
    const [row] = await this.db.select().from(tradingStrategies).where(eq(tradingStrategies.id, id));
    return row ?? null;
  }

  async versions(strategyIds: readonly string[]): Promise<VersionRow[]> {
    if (strategyIds.length === 0) return [];
    return this.db
      .select()
      .from(tradingStrategyVersions)
      .where(sql`${tradingStrategyVersions.strategyId} = any(${sql.param([...strategyIds])}::uuid[])`)
      .orderBy(asc(tradingStrategyVersions.strategyId), asc(tradingStrategyVersions.number));
  }

  async version(id: string): Promise<{ version: VersionRow; strategy: StrategyRow } | null> {
    const [row] = await this.db
      .select({ version: tradingStrategyVersions, strategy: tradingStrategies })
      .from(tradingStrategyVersions)
      .innerJoin(tradingStrategies, eq(tradingStrategies.id, tradingStrategyVersions.strategyId))
      .where(eq(tradingStrategyVersions.id, id));
    return row ?? null;
  }

  async insertAccount(row: AccountRow): Promise<AccountRow> {
    const [created] = await this.db.insert(tradingAccounts).values(row).returning();
    return created!;
  }

  async accounts(userId: string, page: Page): Promise<AccountRow[]> {
    return this.db
      .select()
      .from(tradingAccounts)
      .where(and(eq(tradingAccounts.userId, userId), page.before ? lt(tradingAccounts.id, page.before) : undefined))
      .orderBy(desc(tradingAccounts.id))
      .limit(page.limit);
  }

  async account(executor: Executor, userId: string, id: string): Promise<AccountRow | null> {
    const [row] = await executor.select().from(tradingAccounts).where(and(eq(tradingAccounts.id, id), eq(tradingAccounts.userId, userId)));
    return row ?? null;
  }

  async setKillSwitch(userId: string, id: string, mode: KillSwitchMode, now: Date): Promise<AccountRow | null> {
    return this.updateAccount(userId, id, { killSwitch: mode }, now);
  }

  async setLimits(userId: string, id: string, limits: { maxExposureUsd: number | null }, now: Date): Promise<AccountRow | null> {
    return this.updateAccount(userId, id, limits, now);
  }

  private async updateAccount(userId: string, id: string, set: Partial<Pick<AccountRow, 'killSwitch' | 'maxExposureUsd'>>, now: Date): Promise<AccountRow | null> {
    const [row] = await this.db
      .update(tradingAccounts)
      .set({ ...set, updatedAt: now })
      .where(and(eq(tradingAccounts.id, id), eq(tradingAccounts.userId, userId)))
      .returning();
    return row ?? null;
  }
}
