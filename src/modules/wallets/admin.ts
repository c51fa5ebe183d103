import { AdminCommandError } from '../../admin/commands.js';
import type { AdminCommand } from '../module.js';
import type { WalletsService } from './service.js';

/** Operator commands: a wallet whose provisioning keeps failing can be retried now (backoff reset). */
export function walletAdminCommands(service: WalletsService): Record<string, AdminCommand> {
  return {
    'wallet.retry-provisioning': async (args) => {
      const id = args.id;
      if (typeof id !== 'string' || !id) throw new AdminCommandError('--id is required');
      if (!(await service.retryProvisioning(id))) throw new AdminCommandError('no wallet with that id is waiting for provisioning');
      return { ok: true };
    },
  };
}
