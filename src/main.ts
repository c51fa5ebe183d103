import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { inspect, parseArgs } from 'node:util';
import { AdminCommandError } from './admin/commands.js';
import { adminSocketPath, callAdminSocket, type AdminCaller } from './admin/socket.js';
import { ConfigError, loadConfig, ROLES, type Config, type Role } from './config.js';
import type { Module } from './modules/module.js';
import { acquireDataDirLock, assertDataDirFree, DataDirInUseError, type DataDirLock } from './platform/data-dir-lock.js';
import { redactText } from './platform/log-redaction.js';

// The service itself (app, modules, chain, database) is imported only by the commands that run it:
// help, status and commands a running instance answers through its socket never load it.

const USAGE = `Usage: tollgate <command> (tollgate <command> --help for one command; tollgate --version)
  serve [--roles api,facilitator,relay,assets,worker]   run the service (default: every role)
  status                                                 the running instance's origins and background loops
  migrate                                                apply database migrations and exit
  mgmt-credential create --name NAME                     print a new wallet management credential once
  mgmt-credential revoke --id ID                         revoke a wallet management credential
  dev token --sub USER [--ttl SECONDS]                   print an identity token from the dev issuer
  dev fund ADDRESS AMOUNT                                mint devchain USDG (decimal) and gas to ADDRESS
  credits grant --sub USER --cents N [--note TEXT]       grant credits to a user (recorded with the note)
  admin COMMAND [--id ID] [--name NAME]                  run an operator command (e.g. merchant.disable --id ID)
  audit [--since TIME|DURATION] [--target ID] [--json]   the audit trail: operator commands and credential changes
  keys status | rotate-pepper | reseal [--batch N]       key rotation: where hashes and sealed keys stand; move them
  backup --out FILE                                      a consistent copy of the embedded database and devchain, while serving
  restore FILE                                           a backup into an empty data dir (then tollgate serve)
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
  audit: `tollgate audit [--since TIME|DURATION] [--target ID] [--limit N] [--json]
  The audit trail, oldest first: every operator command (this CLI) and every credential or key change through
  the API, with when, who (principal kind and id), what, the target, the request id and the outcome.
  --since 2026-05-01T00:00:00Z or a duration back from now (30m, 24h, 7d); --target an id (a key, a merchant…);
  --limit the newest N (default 100); --json one JSON object per line. Rows are append-only (docs/operations.md).
  Every other command takes its request id from TOLLGATE_REQUEST_ID (or makes one), and its row keeps it.`,
  keys: `tollgate keys status
tollgate keys rotate-pepper [--batch N]
tollgate keys reseal [--batch N]
  Rotating SECRET_PEPPER or WALLET_MASTER_KEY without downtime (docs/operations.md, Key rotation). status: per
  column, how many secret hashes are under the current pepper, the previous one (SECRET_PEPPER_PREVIOUS), legacy
  or another, and how many sealed keys under the current and previous master key (WALLET_MASTER_KEY_PREVIOUS).
  rotate-pepper re-hashes the rows under the previous pepper; reseal seals again what the previous master key
  sealed. Both run in batches of N (default 500) with a progress line each, can be stopped and run again (they
  resume where they stopped), and end once nothing is left under the previous value: then remove it.`,
  backup: `tollgate backup --out FILE
  Writes FILE (.tar.gz, mode 0600; it holds the dev secrets of the data dir): the embedded database (PGlite) and the
  devchain's state taken at one moment, while the instance serves, and the rest of the data dir (secrets, images,
  agents' volumes). Through the running instance, or with none running from the data dir itself. With DATABASE_URL
  use pg_dump instead (docs/operations.md, Backups).`,
  restore: `tollgate restore FILE
  Unpacks a backup into $TOLLGATE_DATA_DIR, which must be empty or not exist, and loads its database. Then
  \`tollgate serve\` (npm start) on it starts where the backup was taken. Embedded only (not with DATABASE_URL).`,
  admin: `tollgate admin COMMAND [--id ID] [--name NAME]
  Runs one operator command on the running instance (or on the data dir with none running) and prints its JSON
  answer. Every command but the reads (marked read) leaves an audit row (tollgate audit). The commands:
    merchant.disable --id ID, merchant.enable --id ID       a merchant's intents stop (403 merchant_disabled) or resume
    project.disable --id ID, project.enable --id ID         every key of the project refused (403) or accepted again
    project-key.disable --id ID, project-key.revoke --id ID one project API key refused (403 disabled, 401 revoked)
    wallet.retry-provisioning --id ID                       retry a wallet whose provisioning keeps failing, now
    wallet.payments-reconciler                              (read) the pay-and-call reconciler's last run, lag, errors
    intents.stuck                                           (read) intents settling for over 10 minutes
    intents.resolve --id ID                                 resolve one from the chain now
    mgmt-credential.create --name NAME, mgmt-credential.revoke --id ID   (as tollgate mgmt-credential)
    dev.token --sub USER, dev.fund --address A --amount N   (as tollgate dev token / dev fund)
    credits.grant --sub USER --cents N                      (as tollgate credits grant)
    trading.import-candles                                  (as tollgate trading import)
    audit.list                                              (read; as tollgate audit)
    keys.status, keys.rotate-pepper, keys.reseal            (keys.status read; as tollgate keys)
    backup.create --out FILE                                (as tollgate backup)`,
};

class UsageError extends Error {}

/** Refused before it could mislead: the CLI would otherwise act on a data dir no running instance uses. */
class WrongInstanceError extends Error {}

/**
 * From the first SIGINT/SIGTERM to a process whose ports (its origins' and anvil's) are all free: past it
 * anvil is killed by its PID and the process exits with whatever stop has not finished.
 */
const STOP_DEADLINE_MS = 4_000;

/** `--name value` pairs, whatever the names: each admin command checks its own arguments. */
function optionPairs(args: string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = /^--([a-z][\w-]*)(?:=(.*))?$/.exec(args[i]!);
    if (!name) throw new UsageError(`expected --name value, got ${args[i]}`);
    if (name[2] !== undefined) {
      values[name[1]!] = name[2];
      i -= 1;
    } else if (args[i + 1] === undefined) throw new UsageError(`--${name[1]} needs a value`);
    else values[name[1]!] = args[i + 1]!;
  }
  return values;
}

/** `tollgate <version> (<commit>)`: the package's version, and the build's commit when it is known (BUILD_COMMIT, git). */
async function versionLine(): Promise<string> {
  const [fs, { projectPath, PROJECT_ROOT }] = await Promise.all([import('node:fs'), import('./platform/project-root.js')]);
  const pkg = JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string };
  const commit = process.env.BUILD_COMMIT ?? gitCommit(PROJECT_ROOT);
  return `tollgate ${pkg.version}${commit ? ` (${commit.slice(0, 12)})` : ''}`;
}

function gitCommit(cwd: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd, stdio: ['ignore', 'pipe', 'ignore'], timeout: 1_000 }).toString().trim() || null;
  } catch {
    return null;
  }
}

/** Who this CLI run is, for the audit rows of what it asks: set once per run (main). */
let caller: AdminCaller = { requestId: randomUUID(), operator: 'unknown' };

/** The operator's login (sudo's caller first) and host, as a header may carry it. */
function operatorName(): string {
  let user = process.env.SUDO_USER;
  try {
    user ||= os.userInfo().username;
  } catch {
    user ||= process.env.USER ?? 'unknown';
  }
  return `${user}@${os.hostname()}`.replace(/[^\w.@-]/g, '_').slice(0, 200);
}

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  const requestId = process.env.TOLLGATE_REQUEST_ID;
  if (requestId !== undefined && !/^[\w.:-]{1,128}$/.test(requestId)) throw new UsageError('TOLLGATE_REQUEST_ID must be 1-128 characters of [A-Za-z0-9_.:-]');
  caller = { requestId: requestId || randomUUID(), operator: operatorName() };
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command === '--version' || command === '-v' || command === 'version') {
    console.log(await versionLine());
    return 0;
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
        const database = await openConfiguredDatabase(config, (line) => console.log(line));
        await database.close();
      } finally {
        await lock?.release();
      }
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
      const { candleBatches, CandleFileError, importFailureText, parseCandleFile } = await import('./modules/trading/candle-file.js');
      const { readFile } = await import('node:fs/promises');
      let rows, answers;
      try {
        rows = parseCandleFile(await readFile(file, 'utf8'), values.interval);
        const calls = candleBatches(rows).map((candles) => ({ symbol: values.symbol, interval: values.interval, candles }));
        answers = (await runAdminCommands(config, 'trading.import-candles', calls)) as Array<{ imported: number }>;
      } catch (error) {
        // Every import failure is one line (the file's fault, the instance's refusal, the database's), never a stack or SQL.
        if (error instanceof WrongInstanceError || error instanceof DataDirInUseError || error instanceof ConfigError) throw error;
        throw new CandleFileError(importFailureText(error));
      }
      const imported = answers.reduce((n, a) => n + a.imported, 0);
      console.log(`imported ${imported} ${values.interval} candles of ${values.symbol}: ${new Date(rows[0]!.start).toISOString()} to ${new Date(rows.at(-1)!.start).toISOString()}`);
      return 0;
    }
    case 'audit': {
      const { values } = parseArgs({ args: [sub, ...rest].filter((a): a is string => a !== undefined), options: { since: { type: 'string' }, target: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } } });
      const since = values.since === undefined ? undefined : sinceOf(values.since);
      const { entries } = (await runAdminCommand(config, 'audit.list', { since, target: values.target, limit: values.limit })) as { entries: AuditLine[] };
      for (const entry of entries.reverse()) console.log(values.json ? JSON.stringify(entry) : auditLine(entry));
      return 0;
    }
    case 'backup': {
      const { values } = parseArgs({ args: [sub, ...rest].filter((a): a is string => a !== undefined), options: { out: { type: 'string' } } });
      if (!values.out) throw new UsageError('backup needs --out FILE');
      if (config.databaseUrl) {
        console.error('tollgate: the database is PostgreSQL (DATABASE_URL): back it up with pg_dump, e.g.\n' + '  pg_dump --format=custom --file=tollgate.dump "$DATABASE_URL"\n(docs/operations.md, Backups)');
        return 2;
      }
      const done = (await runAdminCommand(config, 'backup.create', { out: path.resolve(values.out) })) as { file: string; bytes: number; databaseBytes: number; chainBlock: number | null; files: number; tookMs: number };
      console.log(`backup ${done.file}: ${done.bytes} bytes (database ${done.databaseBytes} bytes, chain at block ${done.chainBlock ?? 'n/a'}, ${done.files} data dir files) in ${done.tookMs} ms`);
      return 0;
    }
    case 'restore': {
      if (!sub || rest.length > 0) throw new UsageError('restore needs one FILE');
      return restore(config, sub);
    }
    case 'keys': {
      const { values } = parseArgs({ args: rest, options: { batch: { type: 'string' } } });
      if (sub === 'status') {
        printKeyStatus((await runAdminCommand(config, 'keys.status', {})) as KeyStatus);
        return 0;
      }
      if (sub !== 'rotate-pepper' && sub !== 'reseal') throw new UsageError(`unknown keys command ${sub ?? ''}`);
      const what = sub === 'reseal' ? 'sealed keys' : 'secret hashes';
      let total = 0;
      for (;;) {
        const batch = (await runAdminCommand(config, `keys.${sub}`, { batch: values.batch })) as KeyBatch;
        total += batch.done;
        console.log(`${sub}: ${batch.done} ${what} moved in this batch, ${total} in all, ${batch.remaining} left under the previous ${sub === 'reseal' ? 'master key' : 'pepper'}`);
        if (batch.remaining === 0 || batch.done === 0) {
          for (const column of batch.stuck) {
            const legacy = column.legacy ? `${column.legacy} legacy (found under either pepper, re-hashed when next used)` : '';
            const unknown = column.unknown ? `${column.unknown} under neither the current nor the previous ${sub === 'reseal' ? 'key' : 'pepper'}` : '';
            console.log(`  ${column.name}: ${[legacy, unknown].filter(Boolean).join('; ')}`);
          }
          if (batch.remaining > 0) {
            console.error(`tollgate: ${batch.remaining} ${what} are still under the previous value and did not move; see tollgate keys status`);
            return 1;
          }
          console.log(`done: nothing is left under the previous ${sub === 'reseal' ? 'master key: remove WALLET_MASTER_KEY_PREVIOUS' : 'pepper: remove SECRET_PEPPER_PREVIOUS'} from every node`);
          return 0;
        }
      }
    }
    case 'admin': {
      if (!sub) throw new UsageError('admin needs a COMMAND');
      console.log(JSON.stringify(await runAdminCommand(config, sub, optionPairs(rest)), null, 2));
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
  const [{ haltDevchainRestarts, killDevchains }, { createLogger }] = await Promise.all([import('./chain/devchain.js'), import('./platform/request-context.js')]);
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
  const { startServer } = await import('./server.js');
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

/**
 * Runs an operator command on the running instance through its admin socket; with no instance
 * up, opens the data dir itself (PGlite allows one process per data dir, so never both).
 */
async function runAdminCommand(config: Config, name: string, args: Record<string, unknown>): Promise<unknown> {
  return (await runAdminCommands(config, name, [args]))[0];
}

/** runAdminCommand for several calls of one command, in order: the data dir is opened once when no instance answers. */
async function runAdminCommands(config: Config, name: string, calls: Array<Record<string, unknown>>): Promise<unknown[]> {
  const first = await callAdminSocket(config.dataDir, name, calls[0]!, caller);
  if (first !== null) {
    const answers: unknown[] = [first];
    for (const args of calls.slice(1)) {
      const answer = await callAdminSocket(config.dataDir, name, args, caller);
      if (answer === null) throw new WrongInstanceError(`the instance on ${path.resolve(config.dataDir)} stopped answering after ${answers.length} of ${calls.length} calls`);
      answers.push(answer);
    }
    return answers;
  }
  // Nothing answers on this data dir's socket. Refused, touching nothing, when an instance holds the data dir
  // anyway, or (the api port taken) one runs on another data dir; else we take the data dir as `serve` does,
  // so no instance starts on it while we have it open.
  // As serve does: beside a shared database or a real chain, a dev key here (the pepper above all) would make a
  // credential the cluster refuses; and a pepper that is not the database's is refused once the database is open.
  if (config.devKeyProblems.length > 0) throw new ConfigError(config.devKeyProblems);
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
    const mismatch = await ctx.keyRotation.pepperMismatch();
    if (mismatch) throw new ConfigError([mismatch]);
    const command = adminCommands(ctx, modules)[name];
    if (!command) throw new AdminCommandError(`unknown command ${name}`);
    const answers = [];
    for (const args of calls) answers.push(await command(args, { ...caller, concerns: () => {} }));
    return answers;
  } finally {
    for (const module of [...modules].reverse()) await module.close?.();
    await chain.close();
    await database.close();
  }
}

/** `tollgate restore FILE`: into an empty data dir, under its lock (no instance can start on it meanwhile). */
async function restore(config: Config, file: string): Promise<number> {
  if (config.databaseUrl) throw new UsageError('restore loads an embedded backup; with DATABASE_URL restore with pg_restore (docs/operations.md, Backups)');
  const fs = await import('node:fs');
  if (!fs.existsSync(file)) throw new UsageError(`no such file: ${file}`);
  const dataDir = path.resolve(config.dataDir);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
    console.error(`tollgate: ${dataDir} is not empty: restore needs an empty data dir (set TOLLGATE_DATA_DIR to a new directory)`);
    return 2;
  }
  const lock = await acquireDataDirLock(dataDir, { command: 'restore' });
  try {
    const [{ restoreBackup }, { PGlite }, { openConfiguredDatabase }, { AuditLog }, { default: pino }] = await Promise.all([
      import('./admin/backup.js'),
      import('@electric-sql/pglite'),
      import('./platform/configured-database.js'),
      import('./platform/audit.js'),
      import('pino'),
    ]);
    const restored = await restoreBackup(file, dataDir, async (pgDir, tarball) => {
      const pg = await PGlite.create(pgDir, { loadDataDir: tarball });
      await pg.close();
    });
    // The restore is an operator action too: its row goes into the restored database (migrated to this release).
    const database = await openConfiguredDatabase(config);
    try {
      await new AuditLog(database.db, pino({ level: 'silent' })).record({
        action: 'backup.restore',
        actor: { kind: 'operator', id: caller.operator },
        target: path.resolve(file),
        projectId: null,
        requestId: caller.requestId,
        via: 'cli',
        outcome: 'ok',
        detail: { backupCreatedAt: restored.manifest.createdAt, chainBlock: restored.manifest.chainBlock },
      });
    } finally {
      await database.close();
    }
    console.log(`restored ${file} (taken ${restored.manifest.createdAt}, chain at block ${restored.manifest.chainBlock ?? 'n/a'}, ${restored.files} data dir files) into ${dataDir}`);
    console.log('start it with: npm start (or tollgate serve) with this TOLLGATE_DATA_DIR');
    return 0;
  } catch (error) {
    // Half a restore is no restore: leave the data dir empty again for the next try.
    const fs = await import('node:fs');
    for (const entry of fs.readdirSync(dataDir)) if (entry !== 'lock.sock' && entry !== 'instance.json') fs.rmSync(path.join(dataDir, entry), { recursive: true, force: true });
    throw error;
  } finally {
    await lock.release();
  }
}

/** `--since`: a time, or a duration back from now (30m, 24h, 7d). */
function sinceOf(text: string): string {
  const ago = /^(\d{1,6})([smhd])$/.exec(text);
  if (ago) return new Date(Date.now() - Number(ago[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[ago[2] as 's']! * 1000).toISOString();
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw new UsageError(`--since must be a time (ISO 8601) or a duration such as 30m, 24h, 7d: ${text}`);
  return at.toISOString();
}

interface AuditLine {
  at: string;
  actor: { kind: string; id: string };
  action: string;
  target: string | null;
  projectId: string | null;
  requestId: string;
  via: string;
  outcome: string;
  status: number | null;
  detail: Record<string, unknown> | null;
}

function auditLine(entry: AuditLine): string {
  const outcome = entry.status === null ? entry.outcome : `${entry.outcome} ${entry.status}`;
  const error = entry.detail?.code ?? entry.detail?.error;
  return [entry.at, `${entry.actor.kind}:${entry.actor.id}`, entry.action, entry.target ?? '-', outcome + (error ? ` (${String(error)})` : ''), `request ${entry.requestId}`, entry.projectId ? `project ${entry.projectId}` : '']
    .filter(Boolean)
    .join('  ');
}

interface KeyCounts {
  name: string;
  current: number;
  previous: number;
  legacy?: number;
  unknown: number;
}

interface KeyStatus {
  pepper: { current: string; previous: string | null; columns: KeyCounts[] };
  masterKey: { current: string; previous: string | null; columns: KeyCounts[] };
}

interface KeyBatch {
  done: number;
  remaining: number;
  stuck: KeyCounts[];
}

function printKeyStatus(status: KeyStatus): void {
  const part = (label: string, side: KeyStatus['pepper']) => {
    console.log(`${label.padEnd(12)} current ${side.current}${side.previous ? `, previous ${side.previous}` : ', no previous'}`);
    for (const c of side.columns) {
      const counts = [`current ${c.current}`, `previous ${c.previous}`, ...(c.legacy === undefined ? [] : [`legacy ${c.legacy}`]), `other ${c.unknown}`];
      console.log(`  ${c.name.padEnd(40)} ${counts.join('  ')}`);
    }
  };
  part('pepper', status.pepper);
  part('master key', status.masterKey);
}

interface InstanceStatus {
  dataDir: string;
  roles: string[];
  origins: Record<string, string>;
  loops: { name: string; active: boolean; intervalMs: number; lastRunAt: string | null; lagMs: number; consecutiveFailures: number; lastError: { message: string; at: string } | null }[];
  relayer: { floatWei: string | null; publicFloorWei: string; floorWei: string; keys: { address: string; balanceWei: string }[] } | null;
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
  if (status.relayer) {
    const { floatWei, publicFloorWei, floorWei, keys } = status.relayer;
    console.log(`relayer      float ${floatWei === null ? 'unknown (the chain did not answer)' : `${floatWei} wei`}; public /settle and relay stop below ${publicFloorWei} wei, every settle below ${floorWei} wei`);
    for (const key of keys) console.log(`relayer key  ${key.address} ${key.balanceWei} wei`);
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
    // Anything else as Node prints it, less what no terminal or journal should keep: a start-up that cannot
    // reach CHAIN_RPC_URL fails with viem's error, which quotes the URL and its key (log-redaction.ts).
    console.error(redactText(inspect(error)));
    process.exit(1);
  },
);
