// How the CLI runs an operator command: through the running instance's admin socket, or with none running on the
// data dir itself (under its lock, refused when an instance holds it or runs on another data dir). The service
// (app, modules, chain, database) is imported lazily, only when the command runs on the data dir.
import net from 'node:net';
import path from 'node:path';
import { AdminCommandError } from '../admin/errors.js';
import { adminSocketPath, callAdminSocket } from '../admin/socket.js';
import type { Config } from '../config.js';
import { ConfigError } from '../platform/settings.js';
import type { Module } from '../modules/module.js';
import { acquireDataDirLock, assertDataDirFree, DataDirInUseError } from '../platform/data-dir-lock.js';
import { cliCaller } from './caller.js';
import { WrongInstanceError } from './errors.js';

/**
 * Runs an operator command on the running instance through its admin socket; with no instance
 * up, opens the data dir itself (PGlite allows one process per data dir, so never both).
 */
export async function runAdminCommand(config: Config, name: string, args: Record<string, unknown>): Promise<unknown> {
  return (await runAdminCommands(config, name, [args]))[0];
}

/** runAdminCommand for several calls of one command, in order: the data dir is opened once when no instance answers. */
export async function runAdminCommands(config: Config, name: string, calls: Array<Record<string, unknown>>): Promise<unknown[]> {
  const first = await callAdminSocket(config.dataDir, name, calls[0]!, cliCaller());
  if (first !== null) {
    const answers: unknown[] = [first];
    for (const args of calls.slice(1)) {
      const answer = await callAdminSocket(config.dataDir, name, args, cliCaller());
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
  const [{ default: pino }, { adminCommands }, { instantiateModules }, { createContext }, { moduleFactories }, { readBuildInfo }, { systemClock }, { openConfiguredDatabase }, { startChainService }, { openSideBySide }] =
    await Promise.all([
      import('pino'),
      import('../admin/commands.js'),
      import('../app.js'),
      import('../context.js'),
      import('../modules/index.js'),
      import('../modules/system/build-info.js'),
      import('../platform/clock.js'),
      import('../platform/configured-database.js'),
      import('../chain/service.js'),
      import('../platform/open-side-by-side.js'),
    ]);
  const log = pino({ level: 'warn' });
  // The chain too (embedded: the devchain on the data dir's state), so `dev fund` works offline.
  const [database, chain] = await openSideBySide(
    { opened: openConfiguredDatabase(config), close: (db) => db.close() },
    { opened: startChainService({ config, log }), close: (started) => started.close() },
  );
  let modules: Module[] = [];
  try {
    const ctx = await createContext({ config, database, clock: systemClock, log, build: readBuildInfo(config), chain });
    modules = await instantiateModules(ctx, moduleFactories);
    const mismatch = await ctx.keyRotation.pepperMismatch();
    if (mismatch) throw new ConfigError([mismatch]);
    const command = adminCommands(ctx, modules)[name];
    if (!command) throw new AdminCommandError(`unknown command ${name}`);
    const answers = [];
    for (const args of calls) answers.push(await command(args, { ...cliCaller(), concerns: () => {} }));
    return answers;
  } finally {
    for (const module of [...modules].reverse()) await module.close?.();
    await chain.close();
    await database.close();
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
