// The database watchdog. PGlite can fail every query after a WASM fault while the process lives
// on and `/health` keeps answering; a supervisor only helps if the process dies. So a tiny query
// runs every interval; after `failuresBeforeExit` failures in a row the process is unready, then
// `onFatal(EXIT_DATABASE_LOST)` runs (in `serve`: exit, so systemd/Kubernetes/Docker restart it).
import type { Logger } from 'pino';
import { sql } from 'drizzle-orm';
import type { Database } from './db.js';
import { withDeadline, type CheckResult } from './readiness.js';

/** EX_SOFTWARE from sysexits.h: the process stopped itself because its database stopped working. */
export const EXIT_DATABASE_LOST = 70;

export interface WatchdogOptions {
  database: Database;
  log: Logger;
  intervalMs: number;
  failuresBeforeExit: number;
  /** A query slower than this counts as failed. */
  queryTimeoutMs?: number;
  onFatal(code: number): void;
}

export class DatabaseWatchdog {
  #failures = 0;
  #lastError: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  #fired = false;

  constructor(private readonly options: WatchdogOptions) {}

  start(): void {
    const tick = async () => {
      await this.probe();
      if (this.#timer) this.#timer = setTimeout(tick, this.options.intervalMs).unref();
    };
    this.#timer = setTimeout(tick, this.options.intervalMs).unref();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** One real query; counts consecutive failures and gives up on the process at the limit. */
  async probe(): Promise<CheckResult> {
    const result = await pingDatabase(this.options.database, this.options.queryTimeoutMs ?? 2_000);
    if (result.ok) {
      this.#failures = 0;
      this.#lastError = null;
      return result;
    }
    this.#failures += 1;
    this.#lastError = result.reason ?? 'query failed';
    this.options.log.error({ failures: this.#failures, reason: this.#lastError }, 'database check failed');
    if (this.#failures >= this.options.failuresBeforeExit && !this.#fired) {
      this.#fired = true;
      this.stop();
      this.options.log.fatal({ failures: this.#failures }, `the database fails every query; exiting with ${EXIT_DATABASE_LOST} for a restart`);
      this.options.onFatal(EXIT_DATABASE_LOST);
    }
    return { ...result, detail: { consecutiveFailures: this.#failures } };
  }
}

/** `select 1` through the service's own pool/instance, under a deadline. */
export function pingDatabase(database: Database, timeoutMs: number): Promise<CheckResult> {
  return withDeadline(async () => {
    await database.query(sql`select 1`);
    return { ok: true };
  }, timeoutMs);
}
