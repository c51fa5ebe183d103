import { AdminCommandError } from '../../admin/commands.js';
import type { AdminCommand } from '../module.js';
import type { ProjectsService } from './service.js';

const id = (args: Record<string, unknown>, name: string): string => {
  const value = args[name];
  if (typeof value !== 'string' || !value) throw new AdminCommandError(`--${name} is required`);
  return value;
};

const found = (ok: boolean) => {
  if (!ok) throw new AdminCommandError('not found');
  return { ok };
};

/** Operator switches: the spec has no self-service disable for projects, keys or merchants. */
export function projectAdminCommands(service: ProjectsService): Record<string, AdminCommand> {
  return {
    'project.disable': async (args) => found(await service.setProjectStatus(id(args, 'id'), 'disabled')),
    'project.enable': async (args) => found(await service.setProjectStatus(id(args, 'id'), 'active')),
    'project-key.disable': async (args) => found(await service.setKeyStatus(id(args, 'id'), 'disabled')),
    'project-key.revoke': async (args) => found(await service.setKeyStatus(id(args, 'id'), 'revoked')),
    'merchant.disable': async (args) => found(await service.setMerchantEnabled(id(args, 'id'), false)),
    'merchant.enable': async (args) => found(await service.setMerchantEnabled(id(args, 'id'), true)),
  };
}
