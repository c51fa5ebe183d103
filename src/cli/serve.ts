// `tollgate serve`: one instance per data dir (its lock taken first), the service imported and started, its
// origins said on stderr, and a stop on SIGINT/SIGTERM bounded by a deadline. The service (server, chain,
// logger) is imported here lazily, only when serve runs.
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { ConfigError } from '../platform/settings.js';
import { ROLES, type Role } from '../platform/server-settings.js';
import { acquireDataDirLock, type DataDirLock } from '../platform/data-dir-lock.js';
import { UsageError } from './errors.js';

/**
 * From the first SIGINT/SIGTERM to a process whose ports (its origins' and anvil's) are all free: past it
 * anvil is killed by its PID and the process exits with whatever stop has not finished.
 */
const STOP_DEADLINE_MS = 4_000;

export async function serve(config: Config, args: string[]): Promise<number> {
  const refused = [...config.devKeyProblems, ...config.devIdentityProblems];
  if (refused.length > 0) throw new ConfigError(refused);
  const { values } = parseArgs({ args, options: { roles: { type: 'string' } } });
  const roles = (values.roles ?? ROLES.join(',')).split(',').map((r) => r.trim()).filter(Boolean);
  const unknown = roles.filter((role) => !ROLES.includes(role as Role));
  if (unknown.length) throw new UsageError(`unknown roles: ${unknown.join(', ')} (known: ${ROLES.join(', ')})`);

  // The first step that touches the data dir: a second instance is refused here (exit 3), before the
  // devchain's orphan reaper could take the running anvil for an orphan, or PGlite open beside the other.
  // Taken whatever the configuration: the admin socket and the dev secrets live there too.
  const lock = await acquireDataDirLock(config.dataDir, { command: 'serve', roles });
  try {
    return await serveLocked(config, roles as Role[], lock);
  } finally {
    await lock.release();
  }
}

async function serveLocked(config: Config, roles: Role[], lock: DataDirLock): Promise<number> {
  const [{ haltDevchainRestarts, killDevchains }, { createLogger }] = await Promise.all([import('../chain/devchain.js'), import('../platform/request-context.js')]);
  // stdout carries only the log's JSON lines (a log shipper parses each one); what people read as it starts
  // and stops goes to stderr, and each of those moments is also one log line (at info: LOG_LEVEL warn, or
  // anything quieter up to silent, drops them; the stderr lines stay).
  const log = createLogger(config.logLevel);
  const say = (line: string) => process.stderr.write(`${line}\n`);
  // A database that fails every query (PGlite after a WASM fault) ends the process with
  // EXIT_DATABASE_LOST, so its supervisor restarts it; SIGINT/SIGTERM end it with 0.
  let databaseLost: (code: number) => void = () => {};
  let signalled = false;
  const exitCode = new Promise<number>((resolve) => {
    databaseLost = resolve;
    const shutdown = (signal: string) => {
      if (signalled) {
        say(`${signal} again: stopping now`);
        log.info({ signal }, 'signalled again: stopping now');
        killDevchains();
        process.exit(1);
      }
      signalled = true;
      // Synchronously, before an anvil exit can be handled: the signal may have reached anvil's process
      // group too, and a restarted anvil would hold its port (and the stop) open.
      haltDevchainRestarts();
      // The stop below is bounded, but a signal during startup waits for startup first (migrations, anvil):
      // past the deadline from the signal itself, anvil goes by its PID and the process exits anyway.
      setTimeout(() => {
        console.error(`tollgate: not stopped ${STOP_DEADLINE_MS} ms after ${signal}; killing the devchain and exiting`);
        killDevchains();
        process.exit(0);
      }, STOP_DEADLINE_MS + 500);
      say(`${signal}: draining requests and stopping`);
      log.info({ signal }, 'draining requests and stopping');
      resolve(0);
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  });
  const { startServer } = await import('../server.js');
  const server = await startServer({ config, roles, log, onDatabaseLost: (code) => databaseLost(code), refuseForeignPepper: true });
  const urls: Record<string, string> = {};
  for (const [origin, url] of Object.entries(server.urls)) {
    if (!server.origins[origin as keyof typeof server.origins]) continue;
    urls[origin] = url;
    say(`${origin.padEnd(12)} ${url}`);
  }
  // A worker-only node: its listener of /health, /ready and /metrics.
  if (server.listening.worker) say(`${'worker'.padEnd(12)} ${(urls.worker = server.listening.worker)}`);
  const data = config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : config.dataDir;
  say(`${'data'.padEnd(12)} ${data}`);
  const { chain } = server.ctx;
  say(`${'chain'.padEnd(12)} ${chain.network} ${chain.devchain ? `devchain ${chain.rpcUrl}` : '(CHAIN_RPC_URL)'}`);
  say(`roles        ${roles.join(', ')}`);
  // The banner's facts for a machine; a CHAIN_RPC_URL is never logged (it may carry a provider's key).
  log.info({ origins: urls, data, chain: { network: chain.network, devchain: chain.devchain ? chain.rpcUrl : null }, roles }, 'listening');
  lock.record({ urls: chain.devchain ? { ...urls, devchain: chain.rpcUrl } : urls, listen: server.listening as Record<string, string> });

  const code = await exitCode;
  // Bounded either way (the database may be gone and a stop hang on it; a loop or a module may be slow to
  // let go): past the deadline anvil is killed by its PID, and exiting frees every other port.
  // Not unref()ed: a stop stuck on a dead connection may leave nothing else holding the process, which
  // would then end on its own with exit code 0.
  let deadline: NodeJS.Timeout | undefined;
  const stopped = await Promise.race([
    server.stop().then(() => true),
    new Promise<false>((resolve) => (deadline = setTimeout(resolve, STOP_DEADLINE_MS, false))),
  ]);
  clearTimeout(deadline);
  if (!stopped) {
    console.error(`tollgate: the stop did not finish within ${STOP_DEADLINE_MS} ms; killing the devchain and exiting`);
    killDevchains();
  }
  return code;
}
