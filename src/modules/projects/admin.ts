import { AdminCommandError } from '../../admin/errors.js';
import type { AdminCall, AdminCommand } from '../module.js';
import type { ProjectsService } from './service.js';

const id = (args: Record<string, unknown>, name: string): string => {
  const value = args[name];
  if (typeof value !== 'string' || !value) throw new AdminCommandError(`--${name} is required`);
  return value;
};

/** Found: `{ ok: true }`, and the audit row files the switch under the project it concerns (its owner sees it). */
const found = (projectId: string | null, call: AdminCall | undefined) => {
  if (!projectId) throw new AdminCommandError('not found');
  call?.concerns(projectId);
  return { ok: true };
};

/** Operator switches: the spec has no self-service disable for projects, keys or merchants. */
export function projectAdminCommands(service: ProjectsService): Record<string, AdminCommand> {
  const project = async (projectId: string, status: 'active' | 'disabled') => ((await service.setProjectStatus(projectId, status)) ? projectId : null);
  return {
    'project.disable': async (args, call) => found(await project(id(args, 'id'), 'disabled'), call),
    'project.enable': async (args, call) => found(await project(id(args, 'id'), 'active'), call),
    'project-key.disable': async (args, call) => found(await service.setKeyStatus(id(args, 'id'), 'disabled'), call),
    'project-key.revoke': async (args, call) => found(await service.setKeyStatus(id(args, 'id'), 'revoked'), call),
    'merchant.disable': async (args, call) => found(await service.setMerchantEnabled(id(args, 'id'), false), call),
    'merchant.enable': async (args, call) => found(await service.setMerchantEnabled(id(args, 'id'), true), call),
  };
}
