// Operator commands for intents left settling: list them, and resolve one from the chain now (the same
// routine as the reconcile endpoint and the worker; an intent the chain cannot decide yet stays settling).
import { AdminCommandError } from '../../admin/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { AdminCommand } from '../module.js';
import type { Reconciler } from './reconcile.js';
import type { IntentsStore } from './store.js';
import type { IntentRow } from './tables.js';

/** Settling longer than this is stuck for the listing (the worker retries every intent past its grace anyway). */
const STUCK_AFTER_SECONDS = 600;

const brief = (row: IntentRow) => ({
  id: row.id,
  projectId: row.projectId,
  merchantId: row.merchantId,
  status: row.status,
  settlingSince: row.settlingSince?.toISOString() ?? null,
  failureCode: row.failureCode,
  failureMessage: row.failureMessage,
  transactionHash: row.transactionHash,
});

export function intentAdminCommands(store: IntentsStore, reconciler: Reconciler, clock: Clock): Record<string, AdminCommand> {
  return {
    'intents.stuck': async () => {
      const before = new Date(clock.now().getTime() - STUCK_AFTER_SECONDS * 1000);
      return { settlingForMoreThanSeconds: STUCK_AFTER_SECONDS, intents: (await store.settlingSince(before, null, 500)).map(brief) };
    },
    'intents.resolve': async (args) => {
      if (typeof args.id !== 'string' || !args.id) throw new AdminCommandError('--id is required');
      const intent = await store.byId(args.id);
      if (!intent) throw new AdminCommandError(`no intent ${args.id}`);
      const outcome = await reconciler.reconcile(intent);
      if (outcome === 'unavailable') throw new AdminCommandError('the chain cannot be read right now; nothing changed');
      return brief(outcome);
    },
  };
}
