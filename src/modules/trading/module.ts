import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { devReceiver } from '../../chain/dev-receiver.js';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { checkedIdempotencyKey } from '../../platform/idempotency.js';
import { badRequest } from '../../platform/http/errors.js';
import { IDEMPOTENCY_KEY } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module, ModuleFactory, ZodApp } from '../module.js';
import { AgentDeciders, boundTo } from './agent-decider.js';
import { tradingProviderKeys } from './tables.js';
import { Backtester } from './backtest.js';
import { registerBacktestRoutes } from './backtest-routes.js';
import { TradeStore } from './trade-store.js';
import { Optimiser } from './optimiser.js';
import { BacktestJobs } from './backtest-jobs.js';
import { BacktestJobStore } from './backtest-job-store.js';
import { CcxtVenue } from './ccxt-venue.js';
import { Catalog } from './catalog.js';
import { ChargeReconciler, chargeReconcileLoop } from './charge-reconcile.js';
import { ChargeStore } from './charge-store.js';
import { TickConsumer } from './consumer.js';
import { AdminCommandError } from '../../admin/commands.js';
import { CandleFileError, candlesFromWire, importFailureText } from './candle-file.js';
import type { CandleStore } from './candle-store.js';
import { ImportedFeed } from './imported-feed.js';
import { checkDataServes } from './launch-check.js';
import { CANDLE_INTERVALS, EmbeddedFeed, SYMBOL_PATTERN, type MarketDataProvider } from './market-data.js';
import { Meter } from './metering.js';
import { reconcileLoop, RuntimeReconciler } from './reconcile.js';
import { RuntimeService } from './runtimes.js';
import { RuntimeStore } from './runtime-store.js';
import { RuntimeSchedules } from './schedules.js';
import {
  accountIdParams,
  accountLimitsBody,
  accountSchema,
  backtestBody,
  backtestResult,
  chargeSchema,
  chargesQuery,
  createAccountBody,
  createRuntimeBody,
  createStrategyBody,
  executionSchema,
  executionsQuery,
  flattenResult,
  providerKeySchema,
  setProviderBody,
  marketDataSchema,
  listQuery,
  killSwitchBody,
  runtimeIdParams,
  runtimeSchema,
  statusBody,
  strategyIdParams,
  strategySchema,
  strategyVersionInput,
} from './schemas.js';
import type { VersionRow } from './store.js';
import { TickRunner } from './ticks.js';
import { chargeView } from './views.js';
import { PaperVenue, type Venue } from './venue.js';
import { VenueFeed } from './venue-feed.js';

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
          registerRoutes(app, ctx, { catalog, runtimes, backtester, chargeStore, candles: imported.store, agents });
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

function registerRoutes(
  app: ZodApp,
  ctx: AppContext,
  parts: { catalog: Catalog; runtimes: RuntimeService; backtester: Backtester; chargeStore: ChargeStore; candles: CandleStore; agents: AgentDeciders },
): void {
  const { catalog, runtimes, backtester, chargeStore, candles, agents } = parts;
  const userOf = (request: FastifyRequest) => principalOf(request, 'identity').userId;
  const common = { tags: ['agentic-trading'], security: [{ bearer: [] }] };
  const onRequest = ctx.auth.guard(['identity']);
  const base = '/agentic-trading';

  const pageOf = (query: z.infer<typeof listQuery>) => ({ limit: query.limit, before: query.before ?? null });
  app.get(
    `${base}/strategies`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Strategies you own and public ones, newest first, each with its latest version',
        description: "Another user's priced strategy shows its description and each version's summary; its definitions are null (only its owner reads them).",
        querystring: listQuery,
        response: { 200: envelopeSchema(z.array(strategySchema)), ...errors(400, 401) },
      },
    },
    async (request) => envelope(await catalog.listStrategies(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${base}/strategies`,
    { onRequest, schema: { ...common, summary: 'Create a strategy with its first version', body: createStrategyBody, response: { 201: envelopeSchema(strategySchema), ...errors(400, 401) } } },
    async (request, reply) => reply.code(201).send(envelope(await catalog.createStrategy(userOf(request), request.body))),
  );
  app.get(
    `${base}/strategies/:strategyId`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'A strategy with all its versions',
        description: "Another user's priced strategy answers its description and each version's summary, with every definition null: only its owner reads them.",
        params: strategyIdParams,
        response: { 200: envelopeSchema(strategySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await catalog.getStrategy(userOf(request), request.params.strategyId)),
  );
  app.post(
    `${base}/strategies/:strategyId/versions`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Publish a new version (owner only); runtimes keep the version they were launched with',
        params: strategyIdParams,
        body: strategyVersionInput,
        response: { 201: envelopeSchema(strategySchema), ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await catalog.publish(userOf(request), request.params.strategyId, request.body))),
  );
  app.post(
    `${base}/strategies/:strategyId/backtest`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Replay a version over the feed with the live code path (extension)',
        description:
          "Another user's priced strategy is replayed once the account named by accountId has paid its access (maxAccessPriceUsd at or above its price; once per account, shared with runtime activation), and its executions' decisions show what it did, not why. 409 access_price_not_accepted, access_payment_refused (the wallet could not pay); 503 access_payment_pending (try again).",
        params: strategyIdParams,
        body: backtestBody,
        response: { 200: envelopeSchema(backtestResult), ...errors(400, 401, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      // A replay (an llm_agent's model calls above all) stops when its client goes away.
      const gone = new AbortController();
      reply.raw.once('close', () => reply.raw.writableFinished || gone.abort());
      return envelope(await backtester.run(userOf(request), request.params.strategyId, request.body, gone.signal));
    },
  );

  app.get(
    `${base}/market-data`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'The market data this deployment has: the embedded feed, and each imported symbol and interval with its covered ranges (extension)',
        response: { 200: envelopeSchema(marketDataSchema), ...errors(401) },
      },
    },
    async () => envelope({ embedded: { symbols: 'any symbol-shaped name (computed prices)', intervals: Object.keys(CANDLE_INTERVALS) }, imported: await candles.coverage() }),
  );
  app.get(
    `${base}/accounts`,
    { onRequest, schema: { ...common, summary: 'Your trading accounts, newest first', querystring: listQuery, response: { 200: envelopeSchema(z.array(accountSchema)), ...errors(400, 401) } } },
    async (request) => envelope(await catalog.listAccounts(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${base}/accounts/agent-wallets`,
    { onRequest, config: { audit: { action: 'trading.account.create' } }, schema: { ...common, summary: 'A trading account with a new agent wallet (Wallet API provider)', body: createAccountBody, response: { 201: envelopeSchema(accountSchema), ...errors(400, 401) } } },
    async (request, reply) => reply.code(201).send(envelope(await catalog.createAccount(userOf(request), request.body.name))),
  );
  app.put(
    `${base}/accounts/:accountId/providers`,
    {
      onRequest,
      config: { audit: { action: 'trading.provider-key.set', target: ({ params }) => params.accountId } },
      schema: {
        ...common,
        summary: "Set the account's key for a model provider (its llm_agent runtimes and backtests call the model with it); answered masked",
        params: accountIdParams,
        body: setProviderBody,
        response: { 200: envelopeSchema(providerKeySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      await catalog.account(userOf(request), request.params.accountId);
      return envelope(await agents.setKey(request.params.accountId, request.body.provider, request.body.apiKey));
    },
  );
  app.get(
    `${base}/accounts/:accountId/providers`,
    {
      onRequest,
      schema: { ...common, summary: "The account's model-provider keys, masked", params: accountIdParams, response: { 200: envelopeSchema(z.array(providerKeySchema)), ...errors(400, 401, 404) } },
    },
    async (request) => {
      await catalog.account(userOf(request), request.params.accountId);
      return envelope(await agents.keys(request.params.accountId));
    },
  );
  app.put(
    `${base}/accounts/:accountId/limits`,
    {
      onRequest,
      config: { audit: { action: 'trading.limits.set', target: ({ params }) => params.accountId } },
      schema: {
        ...common,
        summary: "Set the account-wide limit across its runtimes (extension): orders that add exposure past it are blocked",
        params: accountIdParams,
        body: accountLimitsBody,
        response: { 200: envelopeSchema(accountSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await catalog.setLimits(userOf(request), request.params.accountId, request.body)),
  );
  app.put(
    `${base}/accounts/:accountId/kill-switch`,
    {
      onRequest,
      config: { audit: { action: 'trading.kill-switch.set', target: ({ params }) => params.accountId } },
      schema: { ...common, summary: "Set the account's kill switch for all its runtimes (extension)", params: accountIdParams, body: killSwitchBody, response: { 200: envelopeSchema(accountSchema), ...errors(400, 401, 404) } },
    },
    async (request) => envelope(await catalog.setKillSwitch(userOf(request), request.params.accountId, request.body.mode)),
  );
  app.get(
    `${base}/accounts/:accountId/charges`,
    {
      onRequest,
      schema: {
        ...common,
        summary: "Metered payments made by the account's agent wallet, newest first (extension)",
        params: accountIdParams,
        querystring: chargesQuery,
        response: { 200: envelopeSchema(z.array(chargeSchema)), ...errors(400, 401, 404) },
      },
    },
    async (request) => {
      const account = await catalog.account(userOf(request), request.params.accountId);
      return envelope((await chargeStore.ofAccount(account.id, request.query.limit, request.query.before ?? null)).map(chargeView));
    },
  );

  app.get(
    `${base}/runtimes`,
    { onRequest, schema: { ...common, summary: 'Your runtimes, newest first', querystring: listQuery, response: { 200: envelopeSchema(z.array(runtimeSchema)), ...errors(400, 401) } } },
    async (request) => envelope(await runtimes.list(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${base}/runtimes`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Launch a runtime (idempotent by idempotencyKey or the Idempotency-Key header)',
        description:
          '201 with the new runtime (provisioning); 200 with the runtime the same key made before; 409 when that key came with another definition. ' +
          '409 data_source_not_venue when the deployment trades on a live venue and the version does not read its prices (dataSources: ["venue"]); 409 market_data_not_current when its imported data lacks the candles a tick now reads. ' +
          'The key is the body\'s idempotencyKey or the Idempotency-Key header (8–200 printable ASCII); one is required, and both, when sent, must be equal.',
        body: createRuntimeBody,
        response: { 200: envelopeSchema(runtimeSchema), 201: envelopeSchema(runtimeSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const header = checkedIdempotencyKey(request.headers[IDEMPOTENCY_KEY]);
      const key = request.body.idempotencyKey ?? header;
      if (key === null || (header !== null && header !== key)) {
        throw badRequest(key === null ? 'Send idempotencyKey in the body or an Idempotency-Key header' : 'The body\'s idempotencyKey and the Idempotency-Key header differ', { reason: 'invalid_idempotency_key' }, 'invalid_idempotency_key');
      }
      const { created, runtime } = await runtimes.create(userOf(request), { ...request.body, idempotencyKey: key });
      return reply.code(created ? 201 : 200).send(envelope(runtime));
    },
  );
  app.get(
    `${base}/runtimes/:runtimeId`,
    { onRequest, schema: { ...common, summary: 'A runtime with its paper book', params: runtimeIdParams, response: { 200: envelopeSchema(runtimeSchema), ...errors(400, 401, 404) } } },
    async (request) => envelope(await runtimes.get(userOf(request), request.params.runtimeId)),
  );
  app.patch(
    `${base}/runtimes/:runtimeId/status`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Pause, resume or stop a runtime',
        description: '409 invalid_status_transition for a move the lifecycle does not allow (stop needs a paused runtime; stopped is terminal).',
        params: runtimeIdParams,
        body: statusBody,
        response: { 200: envelopeSchema(runtimeSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => envelope(await runtimes.setStatus(userOf(request), request.params.runtimeId, request.body.status)),
  );
  app.get(
    `${base}/runtimes/:runtimeId/executions`,
    {
      onRequest,
      schema: { ...common, summary: "A runtime's executions, newest first", params: runtimeIdParams, querystring: executionsQuery, response: { 200: envelopeSchema(z.array(executionSchema)), ...errors(400, 401, 404) } },
    },
    async (request) => envelope(await runtimes.executions(userOf(request), request.params.runtimeId, request.query.limit, request.query.before ?? null)),
  );
  app.post(
    `${base}/runtimes/:runtimeId/executions`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Run an active runtime now (manual trigger)',
        description: '503 execution_failed when the run failed (the feed or the venue did not answer); the failure is recorded on its execution.',
        params: runtimeIdParams,
        response: { 201: envelopeSchema(executionSchema), ...errors(400, 401, 404, 409, 503) },
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await runtimes.runNow(userOf(request), request.params.runtimeId))),
  );
  app.post(
    `${base}/runtimes/:runtimeId/flatten`,
    {
      onRequest,
      schema: {
        ...common,
        summary: 'Close every position of the runtime now (extension)',
        description:
          "One market order per position, largest first, each an execution with triggerType flatten; risk limits never block them and they are not charged. Runs for an active, paused or needs_review runtime and moves none of those statuses. 409 runtime_not_flattenable in another status; an account kill switch of `halt` records them halted (switch to reduce_only to close). 503 execution_failed when the venue or the feed did not answer.",
        params: runtimeIdParams,
        response: { 200: envelopeSchema(flattenResult), ...errors(400, 401, 404, 409, 503) },
      },
    },
    async (request) => envelope(await runtimes.flatten(userOf(request), request.params.runtimeId)),
  );
}
