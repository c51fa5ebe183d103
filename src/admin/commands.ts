import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { AdminCall, AdminCommand, Module } from '../modules/module.js';
import type { AuditLog } from '../platform/audit.js';
import { RotationError } from '../platform/key-rotation.js';
import { errorText } from '../platform/log-redaction.js';
import { AdminCommandError } from './errors.js';

const requireString = (args: Record<string, unknown>, name: string): string => {
  const value = args[name];
  if (typeof value !== 'string' || value.length === 0) throw new AdminCommandError(`--${name} is required`);
  return value;
};

/**
 * The commands that only read. Every other command leaves an audit row, a module's new one included:
 * a command is audited unless it is named here.
 */
export const READ_ONLY_COMMANDS: ReadonlySet<string> = new Set(['status', 'audit.list', 'keys.status', 'intents.stuck', 'wallet.payments-reconciler']);

/** The operator commands: the platform's own plus those the modules add, each audited but the reads. */
export function adminCommands(ctx: AppContext, modules: Module[]): Record<string, AdminCommand> {
  const commands: Record<string, AdminCommand> = {
    'mgmt-credential.create': async (args) => ctx.mgmtCredentials.create(requireString(args, 'name')),
    'mgmt-credential.revoke': async (args) => ({ revoked: await ctx.mgmtCredentials.revoke(requireString(args, 'id')) }),
    'dev.token': async (args) => {
      if (!ctx.devIdentity) throw new AdminCommandError('the dev identity issuer is off (IDENTITY_JWKS_URL is set)');
      const ttl = args.ttl === undefined ? undefined : Number(args.ttl);
      if (ttl !== undefined && !(Number.isInteger(ttl) && ttl > 0)) throw new AdminCommandError('--ttl must be a positive number of seconds');
      return { token: await ctx.devIdentity.sign(requireString(args, 'sub'), ttl) };
    },
    'audit.list': async (args) => {
      const since = args.since === undefined ? undefined : new Date(String(args.since));
      if (since && Number.isNaN(since.getTime())) throw new AdminCommandError('--since must be a time (ISO 8601) or a duration such as 30m, 24h, 7d');
      const limit = args.limit === undefined ? 100 : Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new AdminCommandError('--limit must be a whole number from 1 to 10000');
      const target = typeof args.target === 'string' && args.target ? args.target : undefined;
      return { entries: await ctx.audit.list({ since, target, limit }) };
    },
    'backup.create': async (args) => (await import('./backup.js')).createBackup(ctx, requireString(args, 'out')),
    'keys.status': async () => ctx.keyRotation.status(),
    'keys.rotate-pepper': async (args) => rotationBatch(() => ctx.keyRotation.rotatePepperBatch(batchOf(args))),
    'keys.reseal': async (args) => rotationBatch(() => ctx.keyRotation.resealBatch(batchOf(args))),
  };
  for (const module of modules) Object.assign(commands, module.adminCommands);
  return Object.fromEntries(Object.entries(commands).map(([name, command]) => [name, READ_ONLY_COMMANDS.has(name) ? command : audited(ctx.audit, name, command)]));
}

/** One batch of a rotation (`--batch`, default 500): a refusal (no previous value set) is the operator's to fix. */
const batchOf = (args: Record<string, unknown>): number => {
  const batch = args.batch === undefined ? 500 : Number(args.batch);
  if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) throw new AdminCommandError('--batch must be a whole number from 1 to 10000');
  return batch;
};

async function rotationBatch<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof RotationError) throw new AdminCommandError(error.message);
    throw error;
  }
}

/** Arguments that may name a secret are never copied into a row. */
const SECRET_NAME = /secret|token|password|key$/i;

/** The command's scalar arguments (a candle import's rows are not), for the row's detail. */
function scalarArgs(args: Record<string, unknown>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(args)) {
    if (SECRET_NAME.test(name)) continue;
    if (typeof value === 'string') out[name] = value.slice(0, 200);
    else if (typeof value === 'number' || typeof value === 'boolean') out[name] = value;
  }
  return out;
}

/** What the command acted on: the id it was given, else what it made (a new credential's id), else whom or what it named. */
function targetOf(args: Record<string, unknown>, result: unknown): string | null {
  const made = (result as { id?: unknown } | null | undefined)?.id;
  for (const candidate of [args.id, made, args.sub, args.address, args.symbol, args.name]) {
    if (typeof candidate === 'string' && candidate) return candidate.slice(0, 200);
  }
  return null;
}

/** Runs the command, then appends its row: what it did (ok) or why it did not (refused, error), under the CLI's request id. */
function audited(audit: AuditLog, name: string, command: AdminCommand): AdminCommand {
  return async (args, call) => {
    const requestId = call?.requestId ?? randomUUID();
    const operator = call?.operator ?? 'unknown';
    let projectId: string | null = null;
    const inner: AdminCall = { requestId, operator, concerns: (id) => void (projectId = id) };
    const row = (outcome: 'ok' | 'refused' | 'error', result: unknown, error?: unknown) => ({
      action: name,
      actor: { kind: 'operator', id: operator },
      target: targetOf(args, result),
      projectId,
      requestId,
      via: 'cli' as const,
      outcome,
      detail: { ...scalarArgs(args), ...(error === undefined ? {} : { error: errorText(error).slice(0, 300) }) },
    });
    try {
      const result = await command(args, inner);
      await audit.record(row('ok', result));
      return result;
    } catch (error) {
      await audit.record(row(error instanceof AdminCommandError ? 'refused' : 'error', undefined, error));
      throw error;
    }
  };
}
