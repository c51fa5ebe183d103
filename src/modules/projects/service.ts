import type { SQL, SQLWrapper } from 'drizzle-orm';
import { getAddress, isAddress } from 'viem';
import type { AuditRecord } from '../../platform/audit.js';
import type { AppContext } from '../../context.js';
import type { PrincipalOf } from '../../platform/auth/principal.js';
import { createUsageToucher } from '../../platform/auth/touch.js';
import type { Executor } from '../../platform/db.js';
import { isUniqueViolation } from '../../platform/db-errors.js';
import { definedOnly } from '../../platform/defined-only.js';
import { notFound } from '../../platform/http/errors.js';
import { isoDate } from '../../platform/http/schemas.js';
import { newId } from '../../platform/ids.js';
import { projectErrors } from './errors.js';
import { ProjectKeyCache, scopeTag, type KeyScope } from './key-cache.js';
import type { ApiKeyView, MerchantView, ProjectChange, ProjectView } from './schemas.js';
import { ProjectsStore, type ApiKeyRow, type MerchantRow, type ProjectRow } from './store.js';

const MERCHANT_NAME_UNIQUE = 'merchants_project_name_unique';

/** Projects, their API keys and merchants, owned by signed-in users. */
export class ProjectsService {
  private readonly store: ProjectsStore;
  private readonly touchKey: (id: string, now?: Date) => void;

  /** This node's cache of key lookups; the module starts its listener (until then it is bypassed). */
  readonly keyCache: ProjectKeyCache;

  constructor(private readonly ctx: AppContext) {
    this.store = new ProjectsStore(ctx.db);
    this.touchKey = createUsageToucher((id, now) => this.store.touchKey(id, now));
    this.keyCache = new ProjectKeyCache(ctx.metrics);
  }

  async list(userId: string): Promise<ProjectView[]> {
    const rows = await this.store.projectsOf(userId);
    const ids = rows.map((row) => row.id);
    const [keys, merchantRows] = await Promise.all([this.store.apiKeysOf(ids), this.store.merchantsOf(ids)]);
    return rows.map((row) =>
      projectView(
        row,
        keys.filter((key) => key.projectId === row.id),
        merchantRows.filter((merchant) => merchant.projectId === row.id),
      ),
    );
  }

  /** Creates a project with its first API key; the key's secret is in this answer only. */
  async create(userId: string, name: string) {
    const now = this.ctx.clock.now();
    const project: ProjectRow = { id: newId(), ownerUserId: userId, name, status: 'active', intentEventsQueueId: null, refundWalletId: null, refundWalletCredentialId: null, createdAt: now, updatedAt: now };
    const issued = this.ctx.hasher.issue('api');
    const key: ApiKeyRow = { id: newId(), projectId: project.id, name: 'default', prefix: issued.prefix, secretHash: issued.hash, status: 'active', lastUsedAt: null, createdAt: now };
    await this.ctx.db.transaction(async (tx) => {
      const store = new ProjectsStore(tx);
      await store.insertProject(project);
      await store.insertApiKey(key);
    });
    return { project: projectView(project, [key], []), apiKey: { ...apiKeyView(key), secret: issued.secret } };
  }

  async createApiKey(userId: string, projectId: string, name: string) {
    await this.requireOwned(userId, projectId);
    const issued = this.ctx.hasher.issue('api');
    const key: ApiKeyRow = { id: newId(), projectId, name, prefix: issued.prefix, secretHash: issued.hash, status: 'active', lastUsedAt: null, createdAt: this.ctx.clock.now() };
    await this.store.insertApiKey(key);
    return { ...apiKeyView(key), secret: issued.secret };
  }

  /** Revokes a key at once (the next request with it is 401); revoking twice answers it revoked. */
  async revokeApiKey(userId: string, projectId: string, keyId: string): Promise<ApiKeyView> {
    await this.requireOwned(userId, projectId);
    const row = await this.changingKeys({ keyId }, (store) => store.revokeKey(projectId, keyId));
    if (!row) throw notFound('API key not found', 'api_key_not_found');
    return apiKeyView(row);
  }

  async createMerchant(userId: string, projectId: string, input: { name: string; payTo: string }): Promise<MerchantView> {
    await this.requireOwned(userId, projectId);
    const now = this.ctx.clock.now();
    // Network and asset are the service's (the chain it pays on), never the caller's.
    const { network, address: asset } = this.ctx.chain.asset;
    const row: MerchantRow = { id: newId(), projectId, name: input.name, enabled: true, payTo: input.payTo, network, asset, createdAt: now, updatedAt: now };
    await this.nameChecked(projectId, input.name, () => this.store.insertMerchant(row));
    return merchantView(row);
  }

  /**
   * The owner renames, disables or re-enables a merchant (extension). Disabled: creating intents for it
   * and paying its open ones answer 403 merchant_disabled (the intents module reads `enabled` in the same
   * statement that creates or claims); settled intents keep answering with their result.
   */
  async updateMerchant(userId: string, projectId: string, merchantId: string, change: { name?: string; enabled?: boolean }): Promise<MerchantView> {
    await this.requireOwned(userId, projectId);
    const set = definedOnly(change);
    const row =
      Object.keys(set).length === 0
        ? await this.merchantOfProject(projectId, merchantId)
        : await this.nameChecked(projectId, set.name, () => this.store.updateMerchant(projectId, merchantId, set, this.ctx.clock.now()));
    if (!row) throw projectErrors.merchantNotFound();
    return merchantView(row);
  }

  /** Runs a merchant write; a name already used in the project (the unique constraint decides, so races too) → 409. */
  private async nameChecked<T>(projectId: string, name: string | undefined, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (name === undefined || !isUniqueViolation(error, MERCHANT_NAME_UNIQUE)) throw error;
      throw projectErrors.merchantNameTaken((await this.store.merchantByName(projectId, name))?.id ?? null);
    }
  }

  /**
   * The owner's changes; an omitted field is unchanged. `intentEventsQueueId`: the event queue that receives the
   * project's payment-intent events, or null for none; it must be this project's (the events module answers 404
   * queue_not_found otherwise). `refundWalletId`: the wallet that pays its refunds, or null; the owner proves the
   * right to pay from it with one of its wallet credentials, whose id is kept (refunds are that credential's
   * payments) and whose secret is not.
   */
  async update(userId: string, projectId: string, change: ProjectChange): Promise<ProjectView> {
    let project = await this.requireOwned(userId, projectId);
    const queueId = change.intentEventsQueueId;
    if (queueId !== undefined) {
      if (queueId !== null) await this.ctx.services.events.queues.get(projectId, queueId);
      project = (await this.store.setIntentEventsQueue(projectId, queueId, this.ctx.clock.now())) ?? project;
    }
    if (change.refundWalletId !== undefined) {
      const wallet = change.refundWalletId === null ? null : await this.provenWallet(change.refundWalletId, change.refundWalletCredential ?? '');
      project = (await this.store.setRefundWallet(projectId, wallet, this.ctx.clock.now())) ?? project;
    }
    const [keys, merchantRows] = await Promise.all([this.store.apiKeysOf([projectId]), this.store.merchantsOf([projectId])]);
    return projectView(project, keys, merchantRows);
  }

  /** The wallet credential's wallet, when it is `walletId` and active: 404 for anything else, whatever it is. */
  private async provenWallet(walletId: string, credentialSecret: string): Promise<{ walletId: string; credentialId: string }> {
    const principal = credentialSecret.startsWith('svc_wallet_') ? await this.ctx.keyRotation.find(credentialSecret, this.ctx.services.wallets.resolveCredential) : null;
    if (!principal || principal.walletId !== walletId) throw projectErrors.refundWalletNotFound();
    const wallet = await this.ctx.services.wallets.walletOf(walletId);
    if (wallet.status !== 'active') throw projectErrors.refundWalletNotActive(wallet.status);
    return { walletId, credentialId: principal.credentialId };
  }

  /** The wallet (and credential) that pays the project's refunds; null when it names none. */
  async refundWallet(projectId: string): Promise<{ walletId: string; credentialId: string } | null> {
    const project = await this.store.project(projectId);
    return project?.refundWalletId && project.refundWalletCredentialId ? { walletId: project.refundWalletId, credentialId: project.refundWalletCredentialId } : null;
  }

  /**
   * The intent-events queue of each project that names one, read in the caller's transaction `tx`: the
   * intents module publishes into it in the same transaction as the status change.
   */
  intentEventsQueues(tx: Executor, projectIds: readonly string[]): Promise<Map<string, string>> {
    return new ProjectsStore(tx).intentEventsQueues(projectIds);
  }

  /** The merchant as seen by a project; undefined outside that project. */
  async merchantOfProject(projectId: string, merchantId: string): Promise<MerchantRow | undefined> {
    const row = await this.store.merchant(merchantId);
    return row?.projectId === projectId ? row : undefined;
  }

  /**
   * SQL selecting the merchant (`id, project_id, network, asset, pay_to`) only when it is in the
   * project and enabled, so another module can fold the check into its own statement (one round trip).
   */
  enabledMerchantQuery = (projectId: SQLWrapper | string, merchantId: SQLWrapper | string): SQL => this.store.enabledMerchantQuery(projectId, merchantId);

  async merchant(merchantId: string): Promise<MerchantRow | undefined> {
    return this.store.merchant(merchantId);
  }

  /** Whether `payTo` is an enabled merchant's receiver on this service's network and asset (the facilitator's payTo policy). */
  async isMerchantPayTo(payTo: string): Promise<boolean> {
    if (!isAddress(payTo, { strict: false })) return false;
    const { network, address: asset } = this.ctx.chain.asset;
    return this.store.hasEnabledMerchantPayTo(getAddress(payTo), network, asset);
  }

  /** Who owns the enabled merchants paid at `payTo`: the public facilitator budgets settles per owner. */
  async merchantOwnersOf(payTo: string): Promise<string[]> {
    if (!isAddress(payTo, { strict: false })) return [];
    const { network, address: asset } = this.ctx.chain.asset;
    return this.store.ownersOfMerchantPayTo(getAddress(payTo), network, asset);
  }

  /**
   * Credential resolver for project API keys (disabled keys resolve, and the guard answers 403). Read
   * through this node's cache: every write below that changes a principal drops it on every node.
   */
  resolveKey = async (secretHash: string): Promise<PrincipalOf<'project_key'> | null> => {
    const principal = await this.keyCache.get(secretHash, () => this.lookupKey(secretHash));
    if (principal) this.touchKey(principal.keyId, this.ctx.clock.now());
    return principal;
  };

  private async lookupKey(secretHash: string): Promise<PrincipalOf<'project_key'> | null> {
    const row = await this.store.keyByHash(secretHash);
    if (!row) return null;
    return {
      kind: 'project_key',
      projectId: row.projectId,
      keyId: row.keyId,
      disabled: row.keyStatus !== 'active' || row.projectStatus !== 'active',
    };
  }

  // Operator actions (admin socket): there is no self-service disable in the spec.
  setProjectStatus = (projectId: string, status: 'active' | 'disabled') =>
    this.changingKeys({ projectId }, (store) => store.setProjectStatus(projectId, status, this.ctx.clock.now()));
  setKeyStatus = (keyId: string, status: 'active' | 'disabled' | 'revoked') => this.changingKeys({ keyId }, (store) => store.setKeyStatus(keyId, status));
  setMerchantEnabled = (merchantId: string, enabled: boolean) => this.store.setMerchantEnabled(merchantId, enabled, this.ctx.clock.now());

  /**
   * Every write that changes what a key lookup answers goes through here: the write and the NOTIFY of
   * its scope in one transaction (other nodes drop their entries once it commits, never before), then
   * this node drops its own at once, so the caller's next request sees the change even before this
   * node's listener hears the notification. Creating a key needs none: misses are never cached.
   */
  private async changingKeys<T>(scope: KeyScope, write: (store: ProjectsStore) => Promise<T>): Promise<T> {
    const result = await this.ctx.db.transaction(async (tx) => {
      const store = new ProjectsStore(tx);
      const changed = await write(store);
      if (changed) await store.announceKeyChange(scopeTag(scope));
      return changed;
    });
    this.keyCache.invalidate(scope);
    return result;
  }

  /**
   * The project's audit trail for its owner: the owner's own changes and the operator's switches on the project,
   * its keys and merchants. The operator appears as `operator` (their login is the operator's business).
   */
  async auditTrail(userId: string, projectId: string, page: { limit: number; before?: number }): Promise<AuditRecord[]> {
    await this.requireOwned(userId, projectId);
    const entries = await this.ctx.audit.list({ projectId, limit: page.limit, before: page.before });
    return entries.map((entry) =>
      entry.actor.kind === 'operator' ? { ...entry, actor: { kind: 'operator', id: 'operator' }, detail: entry.detail && { ...entry.detail, error: undefined } } : entry,
    );
  }

  /** The user's project; 404 project_not_found otherwise (another module's owner-only routes use it too). */
  async requireOwned(userId: string, projectId: string): Promise<ProjectRow> {
    const project = await this.store.ownedProject(userId, projectId);
    if (!project) throw projectErrors.projectNotFound();
    return project;
  }
}

export const apiKeyView = (row: ApiKeyRow): ApiKeyView => ({
  id: row.id,
  name: row.name,
  prefix: row.prefix,
  status: row.status,
  lastUsedAt: isoDate(row.lastUsedAt),
  createdAt: row.createdAt.toISOString(),
});

export const merchantView = (row: MerchantRow): MerchantView => ({
  id: row.id,
  name: row.name,
  enabled: row.enabled,
  payTo: row.payTo,
  network: row.network,
  asset: row.asset,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
});

const projectView = (row: ProjectRow, keys: ApiKeyRow[], merchantRows: MerchantRow[]): ProjectView => ({
  id: row.id,
  name: row.name,
  status: row.status,
  intentEventsQueueId: row.intentEventsQueueId,
  refundWalletId: row.refundWalletId,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
  apiKeys: keys.map(apiKeyView),
  merchants: merchantRows.map(merchantView),
});
