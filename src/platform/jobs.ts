import type { Logger } from 'pino';
import type { Database } from './db.js';

/**
 * A background loop of the worker role. `run` returns true when it did work and wants to run
 * again at once (draining a backlog), false to sleep for `intervalMs`.
 */
export interface BackgroundLoop {
  name: string;
  intervalMs: number;
  /** Leader loops run on one node of the cluster at a time (an advisory lock decides which). */
  leader?: boolean;
  run(signal: AbortSignal): Promise<boolean | void>;
}

export class LoopRunner {
  private readonly controller = new AbortController();
  private readonly running: Promise<void>[] = [];
  private readonly wakers = new Map<string, () => void>();

  constructor(
    private readonly database: Database,
    private readonly log: Logger,
  ) {}

  start(loops: BackgroundLoop[]): void {
    for (const loop of loops) this.running.push(this.spin(loop));
  }

  /** Runs a loop now instead of at its next tick (used after an event that makes work). */
  wake(name: string): void {
    this.wakers.get(name)?.();
  }

  async stop(): Promise<void> {
    this.controller.abort();
    for (const wake of this.wakers.values()) wake();
    await Promise.allSettled(this.running);
  }

  private async spin(loop: BackgroundLoop): Promise<void> {
    const signal = this.controller.signal;
    while (!signal.aborted) {
      if (loop.leader) {
        const lease = await this.database.tryHoldAdvisoryLock(`tollgate:leader:${loop.name}`).catch(() => null);
        if (!lease) {
          await this.sleep(loop, Math.max(loop.intervalMs, 1000));
          continue;
        }
        let lost = false;
        void lease.lost.then(() => (lost = true));
        try {
          await this.iterate(loop, () => lost);
        } finally {
          await lease.release();
        }
      } else {
        await this.iterate(loop, () => false);
      }
    }
  }

  private async iterate(loop: BackgroundLoop, lost: () => boolean): Promise<void> {
    const signal = this.controller.signal;
    let failures = 0;
    while (!signal.aborted && !lost()) {
      let more = false;
      try {
        more = (await loop.run(signal)) === true;
        failures = 0;
      } catch (error) {
        failures += 1;
        this.log.error({ err: error, loop: loop.name }, 'background loop failed');
      }
      if (!more) await this.sleep(loop, failures ? Math.min(loop.intervalMs * 2 ** failures, 60_000) : loop.intervalMs);
    }
  }

  private sleep(loop: BackgroundLoop, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakers.set(loop.name, done);
    });
  }
}
