// The trading module's factory: builds its parts (catalog, runtimes, ticks, metering, backtests) over the
// deployment's feeds and venue, and wires them into the app: the admin command, the background loops, and the
// routes (one file per concern under routes/).
import { devReceiver } from '../../chain/dev-receiver.js';
import type { AppContext } from '../../context.js';
import type { Module, ModuleFactory } from '../module.js';
import { AgentDeciders, boundTo } from './strategies/agent-decider.js';
import { tradingProviderKeys } from './tables.js';
import { Backtester } from './backtests/backtest.js';
import { TradeStore } from './backtests/trade-store.js';
import { Optimiser } from './backtests/optimiser.js';
import { BacktestJobs } from './backtests/backtest-jobs.js';
import { BacktestJobStore } from './backtests/backtest-job-store.js';
import { CcxtVenue } from './venues/ccxt-venue.js';
import { Catalog } from './catalog.js';
import { ChargeReconciler, chargeReconcileLoop } from './metering/charge-reconcile.js';
import { ChargeStore } from './metering/charge-store.js';
import { TickConsumer } from './runtimes/consumer.js';
import { AdminCommandError } from '../../admin/errors.js';
import { CandleFileError, candlesFromWire, importFailureText } from './data/candle-file.js';
import { ImportedFeed } from './data/imported-feed.js';
import { checkDataServes } from './data/launch-check.js';
import { EmbeddedFeed, SYMBOL_PATTERN, type MarketDataProvider } from './data/market-data.js';
import { Meter } from './metering/metering.js';
import { reconcileLoop, RuntimeReconciler } from './runtimes/reconcile.js';
import { RuntimeService } from './runtimes/runtimes.js';
import { RuntimeStore } from './runtimes/runtime-store.js';
import { RuntimeSchedules } from './runtimes/schedules.js';
import { registerAccountRoutes } from './routes/accounts.js';
import { registerBacktestRoutes } from './routes/backtests.js';
import { registerMarketDataRoutes } from './routes/market-data.js';
import { registerRuntimeRoutes } from './routes/runtimes.js';
import { registerStrategyRoutes } from './routes/strategies.js';
import type { VersionRow } from './store.js';
import { TickRunner } from './engine/ticks.js';
import { PaperVenue, type Venue } from './venues/venue.js';
import { VenueFeed } from './data/venue-feed.js';

export interface TradingModuleOptions {
  /** Market-data providers by the name a definition's dataSources use; default: the embedded feed. */
  feeds?: MarketDataProvider[];
  /** Where orders go; default: the paper venue. */
  venue?: Venue;
}

/** The parts of the module, for tests and the benchmark that drive ticks by hand. */
export interface TradingParts {
  catalog: Catalog;
  runtimes: RuntimeService;
  reconciler: RuntimeReconciler;
  runner: TickRunner;
  consumer: TickConsumer;
  schedules: RuntimeSchedules;
  meter: Meter;
  charges: ChargeReconciler;
  agents: AgentDeciders;
  /** Background backtests and optimisations (the `trading.backtests` loop runs them). */
  backtestJobs: BacktestJobs;
}

declare module '../../context.js' {
  interface Services {
    trading: TradingParts;
  }
}

/** Agentic trading (the spec's private-preview contract, docs/trading.md). Needs the events and wallets modules. */
export const createTradingModule =
  (options: TradingModuleOptions = {}): ModuleFactory =>
  (ctx: AppContext): Module => {
    const imported = new ImportedFeed(ctx.db);
    const venueConfig = ctx.config.trading.venue;
    const paper = new PaperVenue(ctx.config.trading.paper);
    const venue = options.venue ?? (venueConfig.kind === 'ccxt' ? new CcxtVenue(venueConfig) : paper);
    // A live venue's runtimes trade on its own prices only: the `venue` data source (launch-check.ts).
    if (venue.live && !venue.prices) throw new Error(`the live venue ${venue.name} publishes no prices (Venue.prices): its runtimes would trade on prices that are not its own`);
    const venueFeed = venue.live ? new VenueFeed(venue.prices!, ctx.clock, { maxPriceAgeMs: ctx.config.trading.maxPriceAgeSeconds * 1000 }) : null;
    const feeds = new Map([imported, ...(options.feeds ?? [new EmbeddedFeed()]), ...(venueFeed ? [venueFeed] : [])].map((feed) => [feed.name, feed]));
    const feedFor = (version: VersionRow) => feeds.get((version.definition as { dataSources: string[] }).dataSources[0]!)!;
    const catalog = new Catalog(ctx, feeds);
    const schedules = new RuntimeSchedules(ctx);
    const runtimeStore = new RuntimeStore(ctx.db, ctx.clock);
    const chargeStore = new ChargeStore(ctx.db);
    const meter = new Meter(ctx, chargeStore, meteringPayTo(ctx));
    const charges = new ChargeReconciler(ctx, chargeStore);
    const reconciler = new RuntimeReconciler(runtimeStore, schedules, catalog, meter, ctx.clock, ctx.log, ctx.config.trading.provisioningTimeoutSeconds * 1000);
    const agents = new AgentDeciders(ctx.db, ctx.config, ctx.clock);
    ctx.keyRotation.sealedColumn({
      name: 'trading_provider_keys.sealed_key',
      table: tradingProviderKeys,
      key: [tradingProviderKeys.accountId, tradingProviderKeys.provider],
      column: tradingProviderKeys.sealedKey,
      associatedData: (key) => boundTo(key.account_id!, key.provider!),
    });
    const runner = new TickRunner(ctx, catalog.store, { feedFor, venue, meter, agents });
    const checkData = (version: VersionRow, sealed: boolean) => checkDataServes({ version, feed: feedFor(version), venue, venueFeed, now: ctx.clock.now(), sealed });
    const runtimes = new RuntimeService(ctx, catalog, reconciler, runner, feedFor, checkData);
    const consumer = new TickConsumer(() => ctx.services.events, schedules, runner, (runtime) => reconciler.align(runtime), ctx.log);
    // A backtest fills on paper, whatever the runtimes' venue: a replay must never place a real order.
    const backtester = new Backtester(catalog, feedFor, paper, agents, meter, ctx.clock);
    const optimiser = new Optimiser(catalog, backtester);
    const backtestJobs = new BacktestJobs(new BacktestJobStore(ctx.db, ctx.clock), backtester, optimiser, ctx.clock, ctx.log);
    ctx.services.trading = { catalog, runtimes, reconciler, runner, consumer, schedules, meter, charges, agents, backtestJobs };

    return {
      name: 'trading',
      adminCommands: {
        'trading.import-candles': async (args) => {
          const { symbol, interval } = args;
          if (typeof symbol !== 'string' || !SYMBOL_PATTERN.test(symbol)) throw new AdminCommandError('--symbol must look like BTC-USD (capitals and digits, an optional -QUOTE)');
          if (typeof interval !== 'string') throw new AdminCommandError('--interval is required');
          let rows;
          try {
            rows = candlesFromWire(args.candles, interval);
          } catch (error) {
            if (error instanceof CandleFileError) throw new AdminCommandError(error.message);
            throw error;
          }
          try {
            return { imported: await imported.store.upsert(symbol, interval, rows, ctx.clock.now()) };
          } catch (error) {
            // The operator reads one line, not the statement and its parameters (the log keeps the whole error).
            ctx.log.error({ err: error, command: 'trading.import-candles' }, 'candle import failed');
            throw new AdminCommandError(importFailureText(error));
          }
        },
      },
      loops: [
        reconcileLoop(reconciler),
        { name: 'trading.executions', intervalMs: 1000, run: async () => (await consumer.drain()) > 0 },
        chargeReconcileLoop(charges),
        { name: 'trading.backtests', intervalMs: 2000, run: (signal) => backtestJobs.startNext(signal) },
      ],
      routes: {
        api: (app) => {
          // In the order the OpenAPI document lists them.
          registerStrategyRoutes(app, ctx, { catalog, backtester });
          registerMarketDataRoutes(app, ctx, { candles: imported.store });
          registerAccountRoutes(app, ctx, { catalog, chargeStore, agents });
          registerRuntimeRoutes(app, ctx, { runtimes });
          registerBacktestRoutes(app, ctx, { backtester, runtimes, trades: new TradeStore(ctx.db), optimiser, jobs: backtestJobs });
        },
      },
    };
  };

export const tradingModule = createTradingModule();

/** Where the deployment's metered payments go: TRADING_METERING_PAY_TO, or on the devchain a receiver key in the data dir. */
function meteringPayTo(ctx: AppContext): string | null {
  if (ctx.config.trading.metering.payTo) return ctx.config.trading.metering.payTo;
  return ctx.chain.devchain ? devReceiver(ctx.config.dataDir, 'trading-receiver-key') : null;
}
