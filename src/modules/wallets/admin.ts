import { AdminCommandError } from '../../admin/errors.js';
import type { AdminCommand } from '../module.js';
import type { PayAndCall } from './pay-and-call.js';
import type { WalletsService } from './service.js';
import type { PaymentsLoop } from './worker.js';

/**
 * Operator commands: a wallet whose provisioning keeps failing can be retried now (backoff reset);
 * the pay-and-call payment reconciler's last run, lag and errors, and the chain confirmations still running
 * after their answer (a stop waits for them).
 */
export function walletAdminCommands(service: WalletsService, paymentsLoop: PaymentsLoop, payAndCall: Pick<PayAndCall, 'confirmationsRunning'>): Record<string, AdminCommand> {
  return {
    'wallet.payments-reconciler': async () => ({ ...paymentsLoop.status(), confirmationsRunning: payAndCall.confirmationsRunning }),
    'wallet.retry-provisioning': async (args) => {
      const id = args.id;
      if (typeof id !== 'string' || !id) throw new AdminCommandError('--id is required');
      if (!(await service.retryProvisioning(id))) throw new AdminCommandError('no wallet with that id is waiting for provisioning');
      return { ok: true };
    },
  };
}
