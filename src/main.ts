import path from 'node:path';
import { inspect } from 'node:util';
import { AdminCommandError } from './admin/errors.js';
import { adminSocketPath, callAdminSocket } from './admin/socket.js';
import { identifyCaller } from './cli/caller.js';
import { UsageError, WrongInstanceError } from './cli/errors.js';
import { HELP, USAGE } from './cli/help.js';
import { runOperatorCommand } from './cli/operator-commands.js';
import { printStatus, type InstanceStatus } from './cli/print.js';
import { restore } from './cli/restore.js';
import { serve } from './cli/serve.js';
import { versionLine } from './cli/version.js';
import { deferWasmOptimisation } from './cli/wasm-tiering.js';
import { loadConfig } from './config.js';
import { ConfigError } from './platform/settings.js';
import { acquireDataDirLock, DataDirInUseError } from './platform/data-dir-lock.js';
import { redactText } from './platform/log-redaction.js';

// The `tollgate` CLI's entry: which command runs (src/cli/ holds each one's work), and the exit code of its end.
// The service itself (app, modules, chain, database) is imported only by the commands that run it:
// help, status and commands a running instance answers through its socket never load it.

async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv;
  identifyCaller();
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
  if (command !== 'serve' || config.pgliteWasmTiering === 'deferred') deferWasmOptimisation();
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
    case 'restore': {
      if (!sub || rest.length > 0) throw new UsageError('restore needs one FILE');
      return restore(config, sub);
    }
    default:
      return runOperatorCommand(config, command, sub, rest);
  }
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
