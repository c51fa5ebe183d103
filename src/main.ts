import { parseArgs } from 'node:util';
import pino from 'pino';
import { adminCommands, AdminCommandError } from './admin/commands.js';
import { callAdminSocket } from './admin/socket.js';
import { instantiateModules } from './app.js';
import { ConfigError, loadConfig, ROLES, type Config, type Role } from './config.js';
import { createContext } from './context.js';
import { moduleFactories } from './modules/index.js';
import { readBuildInfo } from './modules/system/build-info.js';
import { systemClock } from './platform/clock.js';
import { openConfiguredDatabase, startServer } from './server.js';
import { startChainService } from './chain/service.js';
import type { Module } from './modules/module.js';

const USAGE = `Usage: tollgate <command>
  serve [--roles api,facilitator,relay,assets,worker]   run the service (default: every role)
  migrate                                                apply database migrations and exit
  mgmt-credential create --name NAME                     print a new wallet management credential once
  mgmt-credential revoke --id ID                         revoke a wallet management credential
  dev token --sub USER [--ttl SECONDS]                   print an identity token from the dev issuer
  dev fund ADDRESS AMOUNT                                mint devchain USDG (decimal) and gas to ADDRESS
  admin COMMAND [--id ID] [--name NAME]                  run an operator command (e.g. merchant.disable --id ID)`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  if (!command || command === 'help' || command === '--help') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config, [sub, ...rest].filter((a): a is string => a !== undefined));
    case 'migrate': {
      const database = await openConfiguredDatabase(config);
      await database.close();
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
  const { values } = parseArgs({ args, options: { roles: { type: 'string' } } });
  const roles = (values.roles ?? ROLES.join(',')).split(',').map((r) => r.trim()).filter(Boolean);
  const unknown = roles.filter((role) => !ROLES.includes(role as Role));
  if (unknown.length) throw new UsageError(`unknown roles: ${unknown.join(', ')} (known: ${ROLES.join(', ')})`);

  // A database that fails every query (PGlite after a WASM fault) ends the process with
  // EXIT_DATABASE_LOST, so its supervisor restarts it; SIGINT/SIGTERM end it with 0.
  let databaseLost: (code: number) => void = () => {};
  const exitCode = new Promise<number>((resolve) => {
    databaseLost = resolve;
    const shutdown = (signal: string) => {
      console.log(`${signal}: draining requests and stopping`);
      resolve(0);
    };
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
  });
  const server = await startServer({ config, roles: roles as Role[], onDatabaseLost: (code) => databaseLost(code) });
  for (const [origin, url] of Object.entries(server.urls)) {
    if (server.origins[origin as keyof typeof server.origins]) console.log(`${origin.padEnd(12)} ${url}`);
  }
  console.log(`${'data'.padEnd(12)} ${config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : config.dataDir}`);
  const { chain } = server.ctx;
  console.log(`${'chain'.padEnd(12)} ${chain.network} ${chain.devchain ? `devchain ${chain.rpcUrl}` : '(CHAIN_RPC_URL)'}`);
  console.log(`roles        ${roles.join(', ')}`);

  const code = await exitCode;
  if (code === 0) {
    await server.stop();
    return 0;
  }
  // The database is gone: stopping may hang on it, so give the drain a bounded time.
  // Not unref()ed: a stop stuck on a dead connection may leave nothing else holding the process, which
  // would then end on its own with exit code 0.
  await Promise.race([server.stop(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
  return code;
}

/**
 * Runs an operator command on the running instance through its admin socket; with no instance
 * up, opens the data dir itself (PGlite allows one process per data dir, so never both).
 */
async function runAdminCommand(config: Config, name: string, args: Record<string, unknown>): Promise<unknown> {
  const viaSocket = await callAdminSocket(config.dataDir, name, args);
  if (viaSocket !== null) return viaSocket;
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
    return await command(args);
  } finally {
    for (const module of [...modules].reverse()) await module.close?.();
    await chain.close();
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    if (error instanceof UsageError || error instanceof AdminCommandError) {
      console.error(`tollgate: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    console.error(error);
    process.exit(1);
  },
);
