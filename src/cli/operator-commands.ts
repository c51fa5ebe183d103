// The operator commands (mgmt-credential, dev, credits, trading import, audit, backup, keys, admin): each one's
// arguments parsed, its admin command run (through the instance's socket or on the data dir) and its answer printed.
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { ConfigError } from '../platform/settings.js';
import { DataDirInUseError } from '../platform/data-dir-lock.js';
import { UsageError, WrongInstanceError } from './errors.js';
import { parseGrantArgs } from '../modules/credits/grant-args.js';
import { auditLine, printKeyStatus, type AuditLine, type KeyBatch, type KeyStatus } from './print.js';
import { runAdminCommand, runAdminCommands } from './run-admin-command.js';

/** Runs `tollgate <command> <sub> ...rest` for an operator command; an unknown command is a usage error. */
export async function runOperatorCommand(config: Config, command: string, sub: string | undefined, rest: string[]): Promise<number> {
  switch (command) {
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
      const grant = parseGrantArgs(values);
      if ('refused' in grant) throw new UsageError(grant.refused);
      const granted = (await runAdminCommand(config, 'credits.grant', values)) as { sub: string; grantedUsdCents: number; balanceUsdCents: number };
      console.log(`granted ${granted.grantedUsdCents} cents to ${granted.sub}; balance ${granted.balanceUsdCents} cents`);
      return 0;
    }
    case 'trading': {
      if (sub !== 'import') throw new UsageError(`unknown trading command ${sub ?? ''}`);
      const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: { symbol: { type: 'string' }, interval: { type: 'string' } } });
      const [file] = positionals;
      if (!values.symbol || !values.interval || !file || positionals.length !== 1) throw new UsageError('trading import needs --symbol, --interval and one FILE');
      const { candleBatches, CandleFileError, importFailureText, parseCandleFile } = await import('../modules/trading/data/candle-file.js');
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

/** `--since`: a time, or a duration back from now (30m, 24h, 7d). */
function sinceOf(text: string): string {
  const ago = /^(\d{1,6})([smhd])$/.exec(text);
  if (ago) return new Date(Date.now() - Number(ago[1]) * { s: 1, m: 60, h: 3600, d: 86_400 }[ago[2] as 's']! * 1000).toISOString();
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw new UsageError(`--since must be a time (ISO 8601) or a duration such as 30m, 24h, 7d: ${text}`);
  return at.toISOString();
}
