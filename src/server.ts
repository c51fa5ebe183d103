import type { Logger } from 'pino';
import { createLogger } from './platform/request-context.js';
import { buildOrigin, instantiateModules } from './app.js';
import type { Config } from './config.js';
import { ConfigError } from './platform/settings.js';
import { ORIGINS, type ListenerName, type OriginName, type Role } from './platform/server-settings.js';
import { createContext, type AppContext } from './context.js';
import { adminCommands } from './admin/commands.js';
import { startAdminSocket, type AdminSocket } from './admin/socket.js';
import { moduleFactories } from './modules/index.js';
import type { Module, ModuleFactory, ZodApp } from './modules/module.js';
import { systemClock, type Clock } from './platform/clock.js';
import type { Database } from './platform/db.js';
import { openConfiguredDatabase } from './platform/configured-database.js';
import { openSideBySide } from './platform/open-side-by-side.js';
import { DatabaseWatchdog } from './platform/db-watchdog.js';
import { LoopRunner } from './platform/jobs.js';
import type { Readiness } from './platform/readiness.js';
import { readBuildInfo } from './modules/system/build-info.js';
import { startChainService } from './chain/service.js';

/** How long requests in flight at a stop may finish before their connections are cut. */
const DRAIN_MS = 2_000;

export interface RunningServer {
  ctx: AppContext;
  /** The instantiated modules (tests reach their admin commands through these). */
  modules: Module[];
  /** Each listener: the origins this node runs, or on a worker-only node the worker's (/health, /ready, /metrics). */
  origins: Partial<Record<ListenerName, ZodApp>>;
  urls: Record<OriginName, string>;
  /** Where each listener is bound (http://host:port), whatever the public URLs: what a local probe calls. */
  listening: Partial<Record<ListenerName, string>>;
  stop(): Promise<void>;
}

export interface StartOptions {
  config: Config;
  roles: readonly Role[];
  clock?: Clock;
  log?: Logger;
  factories?: ModuleFactory[];
  /** Test harness: an already-open database and in-memory dev secrets. */
  database?: Database;
  ephemeralSecrets?: boolean;
  adminSocket?: boolean;
  /**
   * Called with EXIT_DATABASE_LOST once the database has failed DB_WATCHDOG_FAILURES checks in a
   * row (`serve` stops and exits with it). Without it no watchdog runs.
   */
  onDatabaseLost?: (code: number) => void;
  /** Refuse (ConfigError, exit 2) a SECRET_PEPPER that is not the database's (KeyRotation.pepperMismatch): `serve` does. */
  refuseForeignPepper?: boolean;
}

/** Starts the roles asked for: listeners for origins, background loops for `worker`. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const { config, roles } = options;
  const log = options.log ?? createLogger(config.logLevel);
  // The database and the chain open side by side: neither needs the other. A database handed in belongs to the
  // caller, who closes it.
  const closeDatabaseOf = (db: Database) => (options.database ? Promise.resolve() : db.close());
  const [database, chain] = await openSideBySide(
    { opened: options.database ? Promise.resolve(options.database) : openConfiguredDatabase(config, (line) => log.info(line)), close: closeDatabaseOf },
    { opened: startChainService({ config, log, ephemeral: options.ephemeralSecrets }), close: (started) => started.close() },
  );
  const closeDatabase = () => closeDatabaseOf(database);
  const closeChainAndDatabase = async () => {
    await chain.close().catch((error) => log.error({ err: error }, 'chain close failed'));
    await closeDatabase();
  };
  let ctx: AppContext;
  let modules: Module[];
  try {
    ctx = await createContext({
      config,
      database,
      clock: options.clock ?? systemClock,
      log,
      build: readBuildInfo(config),
      ephemeralSecrets: options.ephemeralSecrets,
      chain,
      roles,
    });
    modules = await instantiateModules(ctx, options.factories ?? moduleFactories);
    const mismatch = options.refuseForeignPepper ? await ctx.keyRotation.pepperMismatch() : null;
    if (mismatch) {
      for (const module of [...modules].reverse()) await module.close?.().catch(() => undefined);
      throw new ConfigError([mismatch]);
    }
  } catch (error) {
    await closeChainAndDatabase();
    throw error;
  }

  const origins: Partial<Record<ListenerName, ZodApp>> = {};
  const listeningAt: Partial<Record<ListenerName, string>> = {};
  const listening: ZodApp[] = [];
  const stops: Array<() => Promise<unknown>> = [() => closeListeners(listening, DRAIN_MS)];
  try {
    for (const origin of ORIGINS) {
      if (!roles.includes(origin)) continue;
      const app = await buildOrigin(ctx, origin, modules);
      const address = await app.listen({ host: config.host, port: config.ports[origin] });
      origins[origin] = app;
      listening.push(app);
      listeningAt[origin] = address;
      if (!config.publicUrls[origin]) ctx.urls[origin] = address;
    }
    // A node with no origin still answers its supervisor and its scraper: /health, /ready and /metrics on WORKER_PORT.
    if (roles.includes('worker') && !ORIGINS.some((origin) => roles.includes(origin))) {
      const app = await buildOrigin(ctx, 'worker', modules);
      listeningAt.worker = await app.listen({ host: config.host, port: config.ports.worker });
      origins.worker = app;
      listening.push(app);
    }
    const runner = new LoopRunner(database, log);
    if (roles.includes('worker')) runner.start(modules.flatMap((module) => module.loops ?? []));
    stops.push(() => runner.stop());
    // Loops run on the worker role only (elsewhere the runner holds none and passes): they are its job.
    ctx.readiness.add('loops', ['worker'], async () => runner.check());
    const loopGauge = (name: string, help: string, value: (loop: ReturnType<LoopRunner['report']>[number]) => number | null) =>
      ctx.metrics.gauge(name, help, ['loop'], (set) => {
        for (const loop of runner.report()) {
          const v = value(loop);
          if (v !== null) set({ loop: loop.name }, v);
        }
      });
    loopGauge('tollgate_loop_active', 'Background loops running on this node (1), or idle because another node leads them (0)', (l) => (l.active ? 1 : 0));
    loopGauge('tollgate_loop_lag_seconds', 'Time since the loop last ran well (active loops)', (l) => l.lagMs / 1000);
    loopGauge('tollgate_loop_consecutive_failures', 'Failed runs in a row', (l) => l.consecutiveFailures);
    loopGauge('tollgate_loop_last_run_timestamp_seconds', 'When the loop last ran', (l) => (l.lastRunAt ? Date.parse(l.lastRunAt) / 1000 : null));
    // What /ready would answer, for alerting (deploy/prometheus/alerts.yml): one report per scrape, its checks given
    // 1.5 s so the scrape's 2 s bound holds.
    let readinessInFlight: ReturnType<Readiness['report']> | null = null;
    const readiness = () => (readinessInFlight ??= ctx.readiness.report(1_500).finally(() => (readinessInFlight = null)));
    ctx.metrics.gauge('tollgate_ready', "1 while this node's /ready answers 200 (ready or degraded), 0 while it answers 503", [], async (set) => set({}, (await readiness()).ready ? 1 : 0));
    ctx.metrics.gauge('tollgate_readiness_check_ok', "Each readiness check of this node: 1 passing, 0 failing, with whether it is critical for the node's roles", ['check', 'critical'], async (set) => {
      for (const [check, result] of Object.entries((await readiness()).checks)) set({ check, critical: String(result.critical) }, result.ok ? 1 : 0);
    });
    if (options.onDatabaseLost) {
      const { intervalMs, failuresBeforeExit } = config.databaseWatchdog;
      const watchdog = new DatabaseWatchdog({ database, log, intervalMs, failuresBeforeExit, onFatal: options.onDatabaseLost });
      watchdog.start();
      stops.unshift(async () => watchdog.stop());
    }
    let admin: AdminSocket | null = null;
    if (options.adminSocket !== false) {
      // `status` reads this process: its origins, roles and loops.
      const status = async () => ({
        dataDir: config.dataDir,
        roles,
        origins: Object.fromEntries(Object.keys(origins).map((origin) => [origin, origin === 'worker' ? listeningAt.worker : ctx.urls[origin as OriginName]])),
        loops: runner.report(),
        relayer: ctx.facilitator ? await relayerFloat(ctx.facilitator) : null,
      });
      admin = await startAdminSocket(ctx, { ...adminCommands(ctx, modules), status });
      stops.push(() => admin!.close());
    }
  } catch (error) {
    await stopAll(stops, modules, closeChainAndDatabase, log);
    throw error;
  }

  let stopping: Promise<void> | null = null;
  return {
    ctx,
    modules,
    origins,
    urls: ctx.urls,
    listening: listeningAt,
    stop: () => (stopping ??= stopAll(stops, modules, closeChainAndDatabase, log)),
  };
}

/**
 * Every origin at once, so each port is free as soon as the stop begins: close() stops accepting and ends
 * idle keep-alive connections; requests in flight get `drainMs`, then their connections are cut (a slow
 * or stalled client must not hold the stop, and with it the chain and the database, open).
 */
async function closeListeners(apps: ZodApp[], drainMs: number): Promise<void> {
  const cut = setTimeout(() => {
    for (const app of apps) app.server.closeAllConnections();
  }, drainMs);
  try {
    await Promise.all(apps.map((app) => app.close()));
  } finally {
    clearTimeout(cut);
  }
}

// Listeners first (they drain in-flight requests, bounded), then loops, modules' children, the chain, the database.
async function stopAll(stops: Array<() => Promise<unknown>>, modules: Module[], closeDatabase: () => Promise<void>, log: Logger) {
  for (const stop of stops) await stop().catch((error) => log.error({ err: error }, 'stop failed'));
  for (const module of [...modules].reverse()) {
    await module.close?.().catch((error) => log.error({ err: error, module: module.name }, 'module close failed'));
  }
  await closeDatabase().catch((error) => log.error({ err: error }, 'database close failed'));
}

/** What `tollgate status` shows of the relayer: its float (every key together, and each key) and the floors. */
async function relayerFloat(facilitator: NonNullable<AppContext['facilitator']>) {
  const { floors } = facilitator.gasFloat;
  const keys = await facilitator.relayerStatus().catch(() => []);
  return {
    floatWei: (await facilitator.gasFloat.wei().catch(() => null))?.toString() ?? null,
    publicFloorWei: floors.publicWei.toString(),
    floorWei: floors.ownWei.toString(),
    keys: keys.map((key) => ({ address: key.address, balanceWei: key.balanceWei })),
  };
}
