import type { AppContext } from '../context.js';
import type { AdminCommand, Module } from '../modules/module.js';

export class AdminCommandError extends Error {}

const requireString = (args: Record<string, unknown>, name: string): string => {
  const value = args[name];
  if (typeof value !== 'string' || value.length === 0) throw new AdminCommandError(`--${name} is required`);
  return value;
};

/** The operator commands: the platform's own plus those the modules add. */
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
  };
  for (const module of modules) Object.assign(commands, module.adminCommands);
  return commands;
}
