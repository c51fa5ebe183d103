import net from 'node:net';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { AdminCommandError } from './admin/commands.js';
import { adminSocketPath, callAdminSocket } from './admin/socket.js';
import { ConfigError, loadConfig, ROLES, type Config, type Role } from './config.js';
import type { Module } from './modules/module.js';
import { acquireDataDirLock, assertDataDirFree, DataDirInUseError, type DataDirLock } from './platform/data-dir-lock.js';

// The service itself (app, modules, chain, database) is imported only by the commands that run it:
// help, status and commands a running instance answers through its socket never load it.

const USAGE = `Usage: tollgate <command> (tollgate <command> --help for one command)
  serve [--roles api,facilitator,relay,assets,worker]   run the service (default: every role)
  status                                                 the running instance's origins and background loops
  migrate                                                apply database migrations and exit
  mgmt-credential create --name NAME                     print a new wallet management credential once
  mgmt-credential revoke --id ID                         revoke a wallet management credential
  dev token --sub USER [--ttl SECONDS]                   print an identity token from the dev issuer
  dev fund ADDRESS AMOUNT                                mint devchain USDG (decimal) and gas to ADDRESS
  credits grant --sub USER --cents N [--note TEXT]       grant credits to a user (recorded with the note)
  admin COMMAND [--id ID] [--name NAME]                  run an operator command (e.g. merchant.disable --id ID)
  trading import --symbol S --interval I FILE            import candles (CSV or freqtrade JSON) as market data`;

/** One command's help (`tollgate <command> --help`). */
const HELP: Record<string, string> = {
  serve: `tollgate serve [--roles api,facilitator,relay,assets,worker]
  Runs the service: each origin's listener and (role worker) the background loops. Default: every role.
  Configuration comes from the environment (README, Configuration); data lives in $TOLLGATE_DATA_DIR (./.data),
  one instance per data dir (a second exits 3, naming the running one).`,
  status: `tollgate status
  Asks the instance running on $TOLLGATE_DATA_DIR (through its admin socket) for its origins, roles and each
  background loop's last run, lag, consecutive failures and last error. Exit 1 when no instance answers.`,
  migrate: `tollgate migrate
  Applies the database migrations and exits (they also run at every start).`,
  'mgmt-credential': `tollgate mgmt-credential create --name NAME   print a new wallet management credential (shown once)
tollgate mgmt-credential revoke --id ID       revoke one`,
  dev: `tollgate dev token --sub USER [--ttl SECONDS]   an identity token from the dev issuer (default 12 h)
tollgate dev fund ADDRESS AMOUNT               mint devchain USDG (decimal amount) and gas to ADDRESS`,
  credits: `tollgate credits grant --sub USER --cents N [--note TEXT]
  Grants N credit cents to the identity-token subject USER, from the grants account, recorded with the note
  (default "operator grant"). Prints the balance after.`,
  trading: `tollgate trading import --symbol SYMBOL --interval 1m|5m|15m|1h|1d FILE
  Imports candles into the data source \`imported\` (docs/trading.md, "Imported market data"). FILE is the common
  exchange CSV export (timestamp,open,high,low,close,volume; Unix seconds, Unix ms or ISO 8601 timestamps) or
  freqtrade's JSON ([[ms, open, high, low, close, volume], ...]). A candle already imported is replaced.`,
  admin: `tollgate admin COMMAND [--id ID] [--name NAME]
  Operator switches: merchant.disable, merchant.enable, project.disable, project.enable, project-key.disable,
  project-key.revoke, wallet.retry-provisioning (each --id ID); wallet.payments-reconciler (its last run and lag).`,
};

class UsageError extends Error {}

/** Refused before it could mislead: the CLI would otherwise act on a data dir no running instance uses. */
class WrongInstanceError extends Error {}

/**
 * From the first SIGINT/SIGTERM to a process whose ports (its origins' and anvil's) are all free: past it
 * anvil is killed by its PID and the process exits with whatever stop has not finished.
 */
const STOP_DEADLINE_MS = 4_000;

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (!command || command === 'help' || command === '--help') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    const help = HELP[command];
    if (!help) throw new UsageError(`unknown command ${command}`);
    console.log(help);
    return 0;
  }
  const config = loadConfig();
  switch (command) {
    case 'status': {
      const status = await callAdminSocket(config.dataDir, 'status', {});
      if (status === null) {
        console.error(`tollgate: no instance answers on ${adminSocketPath(path.resolve(config.dataDir))} (data dir ${path.resolve(config.dataDir)})`);
        return 1;
      }
      printStatus(status as InstanceStatus);
      return 0;
    }
    case 'serve':
      return serve(config, [sub, ...rest].filter((a): a is string => a !== undefined));
    case 'migrate': {
      // PGlite lives in the data dir: never opened beside a running instance.
      const lock = config.databaseUrl ? null : await acquireDataDirLock(config.dataDir, { command: 'migrate' });
      try {
        const { openConfiguredDatabase } = await import('./platform/configured-database.js');
        const database = await openConfiguredDatabase(config);
        await database.close();
      } finally {
        await lock?.release();
      }
      console.log('migrations applied');
      return 0;
    }
    case 'mgmt-credential': {
      const { values } = parseArgs({ args: rest, options: { name: { type: 'string' }, id: { type: 'string' } } });
      if (sub === 'create') {
        const created = (await runAdminCommand(config, 'mgmt-credential.create', { name: values.name })) as Record<string, string>;
        console.log(`Wallet management credential "${created.name}" (${created.id})`);
        console.log(`secret: ${created.secret}`);
        console.log('Store it now: it is shown once and cannot be recovered.');
        return 0;
      }
      if (sub === 'revoke') {
        const result = (await runAdminCommand(config, 'mgmt-credential.revoke', { id: values.id })) as { revoked: boolean };
        console.log(result.revoked ? 'revoked' : 'no active credential with that id');
        return result.revoked ? 0 : 1;
      }
      throw new UsageError(`unknown mgmt-credential command ${sub ?? ''}`);
    }
    case 'dev': {
      if (sub === 'token') {
        const { values } = parseArgs({ args: rest, options: { sub: { type: 'string' }, ttl: { type: 'string' } } });
        const result = (await runAdminCommand(config, 'dev.token', { sub: values.sub, ttl: values.ttl })) as { token: string };
        console.log(result.token);
        return 0;
      }
      if (sub === 'fund') {
        const [address, amount] = rest;
        if (!address || !amount) throw new UsageError('dev fund needs ADDRESS and AMOUNT');
        const result = await runAdminCommand(config, 'dev.fund', { address, amount });
        console.log(JSON.stringify(result, null, 2));
        return 0;
      }
      throw new UsageError(`unknown dev command ${sub ?? ''}`);
    }
    case 'credits': {
      if (sub !== 'grant') throw new UsageError(`unknown credits command ${sub ?? ''}`);
      const { values } = parseArgs({ args: rest, options: { sub: { type: 'string' }, cents: { type: 'string' }, note: { type: 'string' } } });
      const granted = (await runAdminCommand(config, 'credits.grant', values)) as { sub: string; grantedUsdCents: number; balanceUsdCents: number };
      console.log(`granted ${granted.grantedUsdCents} cents to ${granted.sub}; balance ${granted.balanceUsdCents} cents`);
      return 0;
    }
    case 'trading': {
      if (sub !== 'import') throw new UsageError(`unknown trading command ${sub ?? ''}`);
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { symbol: { type: 'string' }, interval: { type: 'string' } } });
      const [file] = positionals;
      if (!values.symbol || !values.interval || !file || positionals.length !== 1) throw new UsageError('trading import needs --symbol, --interval and one FILE');
      const { candleBatches, parseCandleFile } = await import('./modules/trading/candle-file.js');
      const { readFile } = await import('node:fs/promises');
      const rows = parseCandleFile(await readFile(file, 'utf8'), values.interval);
      const calls = candleBatches(rows).map((candles) => ({ symbol: values.symbol, interval: values.interval, candles }));
      const answers = (await runAdminCommands(config, 'trading.import-candles', calls)) as Array<{ imported: number }>;
      const imported = answers.reduce((n, a) => n + a.imported, 0);
      console.log(`imported ${imported} ${values.interval} candles of ${values.symbol}: ${new Date(rows[0]!.start).toISOString()} to ${new Date(rows.at(-1)!.start).toISOString()}`);
      return 0;
    }
    case 'admin': {
      if (!sub) throw new UsageError('admin needs a COMMAND');
      const { values } = parseArgs({ args: rest, options: { id: { type: 'string' }, name: { type: 'string' } } });
      console.log(JSON.stringify(await runAdminCommand(config, sub, values), null, 2));
      return 0;
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

async function serve(config: Config, args: string[]): Promise<number> {
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
  const { haltDevchainRestarts, killDevchains } = await import('./chain/devchain.js');
  // A database that fails every query (PGlite after a WASM fault) ends the process with
  // EXIT_DATABASE_LOST, so its supervisor restarts it; SIGINT/SIGTERM end it with 0.
  let databaseLost: (code: number) => void = () => {};
  let signalled = false;
  const exitCode = new Promise<number>((resolve) => {
    databaseLost = resolve;
    const shutdown = (signal: string) => {
      if (signalled) {
        console.log(`${signal} again: stopping now`);
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
      console.log(`${signal}: draining requests and stopping`);
      resolve(0);
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  });
  const { startServer } = await import('./server.js');
  const server = await startServer({ config, roles, onDatabaseLost: (code) => databaseLost(code) });
  const urls: Record<string, string> = {};
  for (const [origin, url] of Object.entries(server.urls)) {
    if (!server.origins[origin as keyof typeof server.origins]) continue;
    urls[origin] = url;
    console.log(`${origin.padEnd(12)} ${url}`);
  }
  console.log(`${'data'.padEnd(12)} ${config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : config.dataDir}`);
  const { chain } = server.ctx;
  console.log(`${'chain'.padEnd(12)} ${chain.network} ${chain.devchain ? `devchain ${chain.rpcUrl}` : '(CHAIN_RPC_URL)'}`);
  console.log(`roles        ${roles.join(', ')}`);
  lock.record({ urls: chain.devchain ? { ...urls, devchain: chain.rpcUrl } : urls });

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

/**
 * Runs an operator command on the running instance through its admin socket; with no instance
 * up, opens the data dir itself (PGlite allows one process per data dir, so never both).
 */
async function runAdminCommand(config: Config, name: string, args: Record<string, unknown>): Promise<unknown> {
  return (await runAdminCommands(config, name, [args]))[0];
}

/** runAdminCommand for several calls of one command, in order: the data dir is opened once when no instance answers. */
async function runAdminCommands(config: Config, name: string, calls: Array<Record<string, unknown>>): Promise<unknown[]> {
  const first = await callAdminSocket(config.dataDir, name, calls[0]!);
  if (first !== null) {
    const answers: unknown[] = [first];
    for (const args of calls.slice(1)) {
      const answer = await callAdminSocket(config.dataDir, name, args);
      if (answer === null) throw new WrongInstanceError(`the instance on ${path.resolve(config.dataDir)} stopped answering after ${answers.length} of ${calls.length} calls`);
      answers.push(answer);
    }
    return answers;
  }
  // Nothing answers on this data dir's socket. Refused, touching nothing, when an instance holds the data dir
  // anyway, or (the api port taken) one runs on another data dir; else we take the data dir as `serve` does,
  // so no instance starts on it while we have it open.
  await refusingHeldDataDir(() => assertDataDirFree(config.dataDir));
  await refuseIfApiPortTaken(config);
  const lock = await refusingHeldDataDir(() => acquireDataDirLock(config.dataDir, { command: process.argv.slice(2, 4).join(' ') }));
  try {
    return await runAdminCommandLocked(config, name, calls);
  } finally {
    await lock.release();
  }
}

/** Runs a lock step of the CLI; a data dir held by an instance whose socket did not answer is refused saying so. */
async function refusingHeldDataDir<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    // Another CLI command holds it: the refusal as it stands says so. An instance holds it: say why we did not reach it.
    if (!(error instanceof DataDirInUseError) || (error.holder && error.holder.command !== 'serve')) throw error;
    throw new WrongInstanceError(
      `data dir ${error.dataDir} is in use by a Tollgate instance (${error.holderDescription}), but its admin socket ` +
        `${adminSocketPath(error.dataDir)} did not answer: it is starting or stopping, or hung.\n` +
        'Retry once `tollgate status` answers, or stop that instance.',
    );
  }
}

/**
 * The api port taken while nobody holds this data dir: an instance most likely runs on another data dir, and
 * what we would write here (a credential, a token signed with this dir's dev keys) would not work there.
 */
async function refuseIfApiPortTaken(config: Config): Promise<void> {
  if (config.ports.api !== 0 && (await portInUse(config.host, config.ports.api))) {
    const dataDir = path.resolve(config.dataDir);
    throw new WrongInstanceError(
      `no Tollgate instance answers on the admin socket of data dir ${dataDir}, but ${config.host}:${config.ports.api} (API_PORT) is in use:\n` +
        `an instance is probably running with another data dir. Point the CLI at it, e.g.\n` +
        `  TOLLGATE_DATA_DIR=/path/to/its/data npx tollgate ${process.argv.slice(2).join(' ')}\n` +
        `(npm start prints its data dir), or stop that instance to use ${dataDir}.`,
    );
  }
}

async function runAdminCommandLocked(config: Config, name: string, calls: Array<Record<string, unknown>>): Promise<unknown[]> {
  const [{ default: pino }, { adminCommands }, { instantiateModules }, { createContext }, { moduleFactories }, { readBuildInfo }, { systemClock }, { openConfiguredDatabase }, { startChainService }] =
    await Promise.all([
      import('pino'),
      import('./admin/commands.js'),
      import('./app.js'),
      import('./context.js'),
      import('./modules/index.js'),
      import('./modules/system/build-info.js'),
      import('./platform/clock.js'),
      import('./platform/configured-database.js'),
      import('./chain/service.js'),
    ]);
  const database = await openConfiguredDatabase(config);
  const log = pino({ level: 'warn' });
  // The chain too (embedded: the devchain on the data dir's state), so `dev fund` works offline.
  const chain = await startChainService({ config, log }).catch(async (error: unknown) => {
    await database.close();
    throw error;
  });
  let modules: Module[] = [];
  try {
    const ctx = await createContext({ config, database, clock: systemClock, log, build: readBuildInfo(config), chain });
    modules = await instantiateModules(ctx, moduleFactories);
    const command = adminCommands(ctx, modules)[name];
    if (!command) throw new AdminCommandError(`unknown command ${name}`);
    const answers = [];
    for (const args of calls) answers.push(await command(args));
    return answers;
  } finally {
    for (const module of [...modules].reverse()) await module.close?.();
    await chain.close();
    await database.close();
  }
}

interface InstanceStatus {
  dataDir: string;
  roles: string[];
  origins: Record<string, string>;
  loops: { name: string; active: boolean; intervalMs: number; lastRunAt: string | null; lagMs: number; consecutiveFailures: number; lastError: { message: string; at: string } | null }[];
}

function printStatus(status: InstanceStatus): void {
  console.log(`data dir     ${path.resolve(status.dataDir)}`);
  console.log(`roles        ${status.roles.join(', ')}`);
  for (const [origin, url] of Object.entries(status.origins)) console.log(`${origin.padEnd(12)} ${url}`);
  if (status.loops.length === 0) console.log('loops        none (no worker role here)');
  for (const loop of status.loops) {
    const state = loop.active ? `last run ${loop.lastRunAt ?? 'not yet'}, lag ${loop.lagMs} ms, ${loop.consecutiveFailures} failures in a row` : 'idle (another node leads it)';
    const error = loop.lastError ? `; last error at ${loop.lastError.at}: ${loop.lastError.message}` : '';
    console.log(`loop ${loop.name}: ${state}${error}`);
  }
}

/** Whether something accepts TCP connections on host:port (within half a second). */
function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: host === '0.0.0.0' ? '127.0.0.1' : host, port });
    const done = (inUse: boolean) => {
      socket.destroy();
      resolve(inUse);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    if (error instanceof WrongInstanceError || error instanceof DataDirInUseError) {
      console.error(`tollgate: ${error.message}`);
      process.exit(3);
    }
    if (error instanceof UsageError || error instanceof AdminCommandError) {
      console.error(`tollgate: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    // A file the command reads (trading import): what is wrong with it, without a stack.
    if (error instanceof Error && (error.name === 'CandleFileError' || (error as NodeJS.ErrnoException).code === 'ENOENT')) {
      console.error(`tollgate: ${error.message}`);
      process.exit(1);
    }
    console.error(error);
    process.exit(1);
  },
);
