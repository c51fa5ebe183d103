import type { AppContext } from '../../context.js';
import { newId } from '../../platform/ids.js';
import { digestOf } from '../../platform/canonical-json.js';
import { tradingErrors } from './errors.js';
import type { MarketDataProvider } from './data/market-data.js';
import { SignalParamsError, signalParams } from './strategies/quant-signal.js';
import type { StrategyVersionInput } from './schemas/strategies.js';
import { CatalogStore, type AccountRow, type NewVersion, type Page, type StrategyRow } from './store.js';
import type { KillSwitchMode, Visibility } from './tables.js';
import { accountView, strategyView } from './views.js';

/** The owner under which trading accounts' agent wallets are made through the Wallet API's provider. */
export const TRADING_WALLET_OWNER = '00000000-0000-7000-8000-7ad100000000';

/** Strategies with their immutable versions, and trading accounts: what runtimes are launched from. */
export class Catalog {
  readonly store: CatalogStore;

  constructor(
    private readonly ctx: AppContext,
    private readonly feeds: ReadonlyMap<string, MarketDataProvider>,
  ) {
    this.store = new CatalogStore(ctx.db);
  }

  async createStrategy(userId: string, input: { name: string; description?: string; visibility: Visibility; access?: { priceUsd: string; payTo: string }; version: StrategyVersionInput }) {
    const now = this.ctx.clock.now();
    const strategy: StrategyRow = {
      id: newId(now.getTime()),
      userId,
      name: input.name,
      description: input.description ?? null,
      visibility: input.visibility,
      latestVersion: 1,
      accessPriceUsd: input.access?.priceUsd ?? null,
      accessPayTo: input.access?.payTo.toLowerCase() ?? null,
      createdAt: now,
      updatedAt: now,
    };
    const created = await this.store.createStrategy(strategy, await this.newVersion(strategy.id, input.version, now));
    return strategyView(created.strategy, [created.version], userId, true);
  }

  /** A new version; runtimes launched from earlier ones keep theirs. Only the owner publishes. */
  async publish(userId: string, strategyId: string, input: StrategyVersionInput) {
    const now = this.ctx.clock.now();
    const published = await this.store.publish(userId, await this.newVersion(strategyId, input, now), now);
    if (!published) throw tradingErrors.strategyNotFound();
    return strategyView(published.strategy, await this.store.versions([strategyId]), userId, true);
  }

  async listStrategies(userId: string, page: Page) {
    const strategies = await this.store.visibleStrategies(userId, page);
    const versions = await this.store.latestVersions(strategies.map((s) => s.id));
    return strategies.map((s) => strategyView(s, versions.filter((v) => v.strategyId === s.id), userId));
  }

  async getStrategy(userId: string, strategyId: string) {
    const strategy = await this.visibleStrategy(userId, strategyId);
    return strategyView(strategy, await this.store.versions([strategyId]), userId, true);
  }

  /** The row, for the services; what the user reads of it is strategyView's to say (a priced one's definitions are its owner's). */
  async visibleStrategy(userId: string, strategyId: string): Promise<StrategyRow> {
    const strategy = await this.store.strategy(strategyId);
    if (!strategy || (strategy.userId !== userId && strategy.visibility !== 'public')) throw tradingErrors.strategyNotFound();
    return strategy;
  }

  /** A version the user may launch (of their own strategy or a public one), with its strategy. */
  async visibleVersion(userId: string, versionId: string) {
    const found = await this.store.version(versionId);
    if (!found || (found.strategy.userId !== userId && found.strategy.visibility !== 'public')) throw tradingErrors.versionNotFound();
    return found;
  }

  /** Checks what the schema cannot: the signal's parameters, the symbols and the data sources this deployment has. */
  private async newVersion(strategyId: string, input: StrategyVersionInput, now: Date): Promise<NewVersion> {
    try {
      if (input.kind === 'quant_signal') signalParams(input.definition.instructions);
    } catch (error) {
      if (error instanceof SignalParamsError) throw tradingErrors.invalidDefinition(`definition.instructions: ${error.message}`);
      throw error;
    }
    const unknownSource = input.definition.dataSources.find((source) => !this.feeds.has(source));
    if (unknownSource) throw tradingErrors.invalidDefinition(`definition.dataSources: unknown data source ${unknownSource} (this deployment offers: ${[...this.feeds.keys()].join(', ')})`);
    const feed = this.feeds.get(input.definition.dataSources[0]!)!;
    for (const symbol of input.definition.universe) {
      if (!(await feed.supports(symbol))) {
        const hint = feed.name === 'imported' ? ' (import its candles first: tollgate trading import)' : '';
        throw tradingErrors.invalidDefinition(`definition.universe: ${feed.name} does not quote ${symbol}${hint}`);
      }
    }
    const content = { kind: input.kind, schemaVersion: input.schemaVersion, definition: input.definition };
    return { id: newId(now.getTime()), strategyId, ...content, contentHash: digestOf(content), createdAt: now };
  }

  // Accounts.

  /** A trading account with a new agent wallet, made (and provisioned) through the Wallet API's provider. */
  async createAccount(userId: string, name: string) {
    const now = this.ctx.clock.now();
    const id = newId(now.getTime());
    const created = await this.ctx.services.wallets.create(TRADING_WALLET_OWNER, { externalId: `trading-account:${id}`, name: `${name} (${userId})`.slice(0, 200), chainType: 'ethereum' });
    const row = await this.store.insertAccount({ id, userId, name, type: 'agent_wallet', walletId: created.wallet.id, killSwitch: 'off', maxExposureUsd: null, createdAt: now, updatedAt: now });
    return accountView(row, created.wallet);
  }

  async listAccounts(userId: string, page: Page) {
    return Promise.all((await this.store.accounts(userId, page)).map((row) => this.withWallet(row)));
  }

  async account(userId: string, accountId: string): Promise<AccountRow> {
    const row = await this.store.account(this.ctx.db, userId, accountId);
    if (!row) throw tradingErrors.accountNotFound();
    return row;
  }

  /** The account's wallet status: runtimes provision only on an active one. */
  async walletStatus(row: AccountRow): Promise<string> {
    return (await this.ctx.services.wallets.get(TRADING_WALLET_OWNER, row.walletId)).status;
  }

  async setKillSwitch(userId: string, accountId: string, mode: KillSwitchMode) {
    const row = await this.store.setKillSwitch(userId, accountId, mode, this.ctx.clock.now());
    if (!row) throw tradingErrors.accountNotFound();
    return this.withWallet(row);
  }

  async setLimits(userId: string, accountId: string, limits: { maxExposureUsd: number | null }) {
    const row = await this.store.setLimits(userId, accountId, limits, this.ctx.clock.now());
    if (!row) throw tradingErrors.accountNotFound();
    return this.withWallet(row);
  }

  private async withWallet(row: AccountRow) {
    return accountView(row, await this.ctx.services.wallets.get(TRADING_WALLET_OWNER, row.walletId));
  }
}
