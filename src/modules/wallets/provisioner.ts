import type { Logger } from 'pino';
import type { Clock } from '../../platform/clock.js';
import type { Db } from '../../platform/db.js';
import type { BackgroundLoop } from '../../platform/jobs.js';
import { errorText } from '../../platform/log-redaction.js';
import type { WalletProvider } from './provider.js';
import { WalletsStore, type WalletRow } from './store.js';

const BATCH = 10;
/** How long a claimed attempt keeps other workers off the wallet; longer than any attempt. */
export const ATTEMPT_LEASE_MS = 60_000;
const ATTEMPT_TIMEOUT_MS = 30_000;
const BACKOFF_BASE_MS = 1_000;
const BACKOFF_MAX_MS = 15 * 60_000;

/** Delay before retry number `attempts` (1, 2, 4 ... seconds, capped at 15 minutes). */
export const backoffMs = (attempts: number) => Math.min(BACKOFF_BASE_MS * 2 ** Math.max(attempts - 1, 0), BACKOFF_MAX_MS);

/**
 * Moves wallets `provisioning` → `active`, or → `failed` with `lastError` and a backoff, after
 * which the worker tries again (failed wallets are retried until they succeed).
 */
export class Provisioner {
  private readonly store: WalletsStore;

  constructor(
    db: Db,
    private readonly provider: WalletProvider,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.store = new WalletsStore(db);
  }

  /** One attempt on a wallet this caller holds the lease of. Never throws. */
  async attempt(row: WalletRow): Promise<WalletRow> {
    try {
      const key = await withTimeout(this.provider.provision(row.id), ATTEMPT_TIMEOUT_MS);
      return (await this.store.markActive(row.id, key.address, key.keyRef, this.clock.now())) ?? row;
    } catch (error) {
      const now = this.clock.now();
      const message = describe(error);
      this.log.warn({ walletId: row.id, attempt: row.provisionAttempts + 1, error: message }, 'wallet provisioning failed');
      const retryAt = new Date(now.getTime() + backoffMs(row.provisionAttempts + 1));
      return (await this.store.markFailed(row.id, message, retryAt, now).catch(() => undefined)) ?? row;
    }
  }

  readonly loop: BackgroundLoop = {
    name: 'wallets.provision',
    intervalMs: 1_000,
    run: async () => {
      const now = this.clock.now();
      const claimed = await this.store.claimDue(now, new Date(now.getTime() + ATTEMPT_LEASE_MS), BATCH);
      for (const row of claimed) await this.attempt(row);
      return claimed.length === BATCH;
    },
  };
}

// Provider messages go to callers as `lastError`: keep them short and single-line, and a quoted URL to its host.
function describe(error: unknown): string {
  const text = errorText(error);
  return text.replace(/\s+/g, ' ').slice(0, 500) || 'provisioning failed';
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`wallet provider timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
