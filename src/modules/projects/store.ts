import { and, desc, eq, inArray, isNotNull, isNull, lt, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { Executor } from '../../platform/db.js';
import { PROJECT_KEYS_CHANNEL } from './key-cache.js';
import { merchants, projectApiKeys, projects } from './tables.js';

export type ProjectRow = typeof projects.$inferSelect;
export type ApiKeyRow = typeof projectApiKeys.$inferSelect;
export type MerchantRow = typeof merchants.$inferSelect;

/** SQL of the projects module: projects, their API keys and merchants. */
export class ProjectsStore {
  constructor(private readonly db: Executor) {}

  async insertProject(row: typeof projects.$inferInsert): Promise<void> {
    await this.db.insert(projects).values(row);
  }

  async insertApiKey(row: typeof projectApiKeys.$inferInsert): Promise<void> {
    await this.db.insert(projectApiKeys).values(row);
  }

  async insertMerchant(row: typeof merchants.$inferInsert): Promise<void> {
    await this.db.insert(merchants).values(row);
  }

  async ownedProject(ownerUserId: string, projectId: string): Promise<ProjectRow | undefined> {
    const [row] = await this.db
      .select()
      .from(projects)
      .where(and(eq(projects.id, projectId), eq(projects.ownerUserId, ownerUserId)));
    return row;
  }

  async projectsOf(ownerUserId: string): Promise<ProjectRow[]> {
    return this.db.select().from(projects).where(eq(projects.ownerUserId, ownerUserId)).orderBy(desc(projects.createdAt), desc(projects.id));
  }

  async apiKeysOf(projectIds: string[]): Promise<ApiKeyRow[]> {
    if (projectIds.length === 0) return [];
    return this.db.select().from(projectApiKeys).where(inArray(projectApiKeys.projectId, projectIds)).orderBy(desc(projectApiKeys.createdAt));
  }

  async merchantsOf(projectIds: string[]): Promise<MerchantRow[]> {
    if (projectIds.length === 0) return [];
    return this.db.select().from(merchants).where(inArray(merchants.projectId, projectIds)).orderBy(desc(merchants.createdAt));
  }

  enabledMerchantQuery(projectId: SQLWrapper | string, merchantId: SQLWrapper | string): SQL {
    return sql`select ${merchants.id} as id, ${merchants.projectId} as project_id, ${merchants.network} as network, ${merchants.asset} as asset, ${merchants.payTo} as pay_to
      from ${merchants} where ${merchants.id} = ${merchantId} and ${merchants.projectId} = ${projectId} and ${merchants.enabled}`;
  }

  /** Whether an enabled merchant receives at this checksummed payTo on this network and asset. */
  async hasEnabledMerchantPayTo(payTo: string, network: string, asset: string): Promise<boolean> {
    const rows = await this.db
      .select({ id: merchants.id })
      .from(merchants)
      .where(and(eq(merchants.payTo, payTo), eq(merchants.network, network), eq(merchants.asset, asset), eq(merchants.enabled, true)))
      .limit(1);
    return rows.length > 0;
  }

  /** The users who own an enabled merchant paid at `payTo` (a few at most: payTo is rarely shared). */
  async ownersOfMerchantPayTo(payTo: string, network: string, asset: string): Promise<string[]> {
    const rows = await this.db
      .selectDistinct({ owner: projects.ownerUserId })
      .from(merchants)
      .innerJoin(projects, eq(projects.id, merchants.projectId))
      .where(and(eq(merchants.payTo, payTo), eq(merchants.network, network), eq(merchants.asset, asset), eq(merchants.enabled, true)))
      .orderBy(projects.ownerUserId)
      .limit(10);
    return rows.map((row) => row.owner);
  }

  async merchant(merchantId: string): Promise<MerchantRow | undefined> {
    const [row] = await this.db.select().from(merchants).where(eq(merchants.id, merchantId));
    return row;
  }

  /** The key behind a secret hash, with its project's status; revoked keys are not found. */
  async keyByHash(secretHash: string) {
    const [row] = await this.keyByHashQuery().execute({ secretHash });
    return row;
  }

  // A project-key request runs this lookup when the key is not in the node's cache (key-cache.ts), so it
  // is prepared once per connection instead of built and planned each time.
  private keyByHashPrepared: ReturnType<ProjectsStore['prepareKeyByHash']> | null = null;
  private keyByHashQuery() {
    return (this.keyByHashPrepared ??= this.prepareKeyByHash());
  }
  private prepareKeyByHash() {
    return this.db
      .select({ keyId: projectApiKeys.id, projectId: projectApiKeys.projectId, keyStatus: projectApiKeys.status, projectStatus: projects.status })
      .from(projectApiKeys)
      .innerJoin(projects, eq(projects.id, projectApiKeys.projectId))
      .where(and(eq(projectApiKeys.secretHash, sql.placeholder('secretHash')), inArray(projectApiKeys.status, ['active', 'disabled'])))
      .prepare('project_key_by_hash');
  }

  async touchKey(keyId: string, now: Date): Promise<void> {
    await this.db
      .update(projectApiKeys)
      .set({ lastUsedAt: now })
      .where(and(eq(projectApiKeys.id, keyId), or(isNull(projectApiKeys.lastUsedAt), lt(projectApiKeys.lastUsedAt, sql`${now}::timestamptz - interval '60 seconds'`))));
  }

  /**
   * Tells every node's key cache that the keys of this tag changed. Run it in the writing transaction:
   * PostgreSQL delivers a NOTIFY only if that commits, and only after, so no node can re-read the old row.
   */
  async announceKeyChange(tag: string): Promise<void> {
    await this.db.execute(sql`select pg_notify(${PROJECT_KEYS_CHANNEL}, ${tag})`);
  }

  async setProjectStatus(projectId: string, status: string, now: Date): Promise<boolean> {
    const rows = await this.db.update(projects).set({ status, updatedAt: now }).where(eq(projects.id, projectId)).returning({ id: projects.id });
    return rows.length > 0;
  }

  /** Revokes a key of the project; the key after, or undefined when it is not that project's. */
  async revokeKey(projectId: string, keyId: string): Promise<ApiKeyRow | undefined> {
    const [row] = await this.db
      .update(projectApiKeys)
      .set({ status: 'revoked' })
      .where(and(eq(projectApiKeys.id, keyId), eq(projectApiKeys.projectId, projectId)))
      .returning();
    return row;
  }

  /** The key's project, or null when there is no such key. */
  async setKeyStatus(keyId: string, status: string): Promise<string | null> {
    const [row] = await this.db.update(projectApiKeys).set({ status }).where(eq(projectApiKeys.id, keyId)).returning({ projectId: projectApiKeys.projectId });
    return row?.projectId ?? null;
  }

  /** Sets the project's intent-events queue; the project after. */
  async setIntentEventsQueue(projectId: string, queueId: string | null, now: Date): Promise<ProjectRow | undefined> {
    const [row] = await this.db.update(projects).set({ intentEventsQueueId: queueId, updatedAt: now }).where(eq(projects.id, projectId)).returning();
    return row;
  }

  /** Sets (or clears) the project's refund wallet and the credential that pays from it; the project after. */
  async setRefundWallet(projectId: string, wallet: { walletId: string; credentialId: string } | null, now: Date): Promise<ProjectRow | undefined> {
    const [row] = await this.db
      .update(projects)
      .set({ refundWalletId: wallet?.walletId ?? null, refundWalletCredentialId: wallet?.credentialId ?? null, updatedAt: now })
      .where(eq(projects.id, projectId))
      .returning();
    return row;
  }

  async project(projectId: string): Promise<ProjectRow | undefined> {
    const [row] = await this.db.select().from(projects).where(eq(projects.id, projectId));
    return row;
  }

  /** The intent-events queue of each of these projects that names one, by project id. */
  async intentEventsQueues(projectIds: readonly string[]): Promise<Map<string, string>> {
    if (projectIds.length === 0) return new Map();
    const rows = await this.db
      .select({ id: projects.id, queueId: projects.intentEventsQueueId })
      .from(projects)
      .where(and(inArray(projects.id, [...projectIds]), isNotNull(projects.intentEventsQueueId)));
    return new Map(rows.map((row) => [row.id, row.queueId!]));
  }

  /** Changes a merchant of the project; the merchant after, or undefined when it is not that project's. A taken name throws a unique violation. */
  async updateMerchant(projectId: string, merchantId: string, change: { name?: string; enabled?: boolean }, now: Date): Promise<MerchantRow | undefined> {
    const [row] = await this.db
      .update(merchants)
      .set({ ...change, updatedAt: now })
      .where(and(eq(merchants.id, merchantId), eq(merchants.projectId, projectId)))
      .returning();
    return row;
  }

  async merchantByName(projectId: string, name: string): Promise<MerchantRow | undefined> {
    const [row] = await this.db.select().from(merchants).where(and(eq(merchants.projectId, projectId), eq(merchants.name, name)));
    return row;
  }

  /** The merchant's project, or null when there is no such merchant. */
  async setMerchantEnabled(merchantId: string, enabled: boolean, now: Date): Promise<string | null> {
    const [row] = await this.db.update(merchants).set({ enabled, updatedAt: now }).where(eq(merchants.id, merchantId)).returning({ projectId: merchants.projectId });
    return row?.projectId ?? null;
  }
}
