import type { Logger } from 'pino';
import type { Database } from './db.js';
import { errorText } from './log-redaction.js';
import type { CheckResult } from './readiness.js';

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

/** What readiness sees of a loop on this node. */
export interface LoopState {
  name: string;
  intervalMs: number;
  /** Runs on one node of the cluster at a time (BackgroundLoop.leader). */
  leader: boolean;
  /** A leader loop runs only on the node holding its lock; elsewhere it is idle by design. */
  active: boolean;
  /** When a run last ended without throwing (or when the loop became active). */
  lastOkAt: number | null;
  consecutiveFailures: number;
  /** When a run last ended, well or not. */
  lastRunAt: number | null;
  /** The last failure's message and time (kept after later good runs, for operators). */
  lastError: { message: string; at: number } | null;
}

/** A loop is lagging when its last good run is this many intervals old (and at least LAG_FLOOR_MS). */
const LAG_INTERVALS = 3;
const LAG_FLOOR_MS = 30_000;
const FAILURES_UNREADY = 3;

/** How long ago an active loop last ran well; an idle (not leading) loop has no lag. */
const lagOf = (state: LoopState, now: number) => (state.active && state.lastOkAt !== null ? now - state.lastOkAt : 0);

export class LoopRunner {
  private readonly controller = new AbortController();
  private readonly running: Promise<void>[] = [];
  private readonly wakers = new Map<string, () => void>();
  private readonly states = new Map<string, LoopState>();

  constructor(
    private readonly database: Database,
    private readonly log: Logger,
  ) {}

  start(loops: BackgroundLoop[]): void {
    for (const loop of loops) {
      this.states.set(loop.name, { name: loop.name, intervalMs: loop.intervalMs, leader: loop.leader === true, active: false, lastOkAt: null, consecutiveFailures: 0, lastRunAt: null, lastError: null });
      this.running.push(this.spin(loop));
    }
  }

  /** Readiness of this node's loops: failing `FAILURES_UNREADY` times in a row, or lagging, is unready. */
  check(now = Date.now()): CheckResult {
    const lagging: string[] = [];
    const detail: Record<string, unknown> = {};
    for (const state of this.states.values()) {
      const lagMs = lagOf(state, now);
      detail[state.name] = { active: state.active, lagMs, failures: state.consecutiveFailures };
      if (!state.active) continue;
      if (state.consecutiveFailures >= FAILURES_UNREADY || lagMs > Math.max(LAG_INTERVALS * state.intervalMs, LAG_FLOOR_MS)) lagging.push(state.name);
    }
    return lagging.length ? { ok: false, reason: `failing or lagging: ${lagging.join(', ')}`, detail } : { ok: true, detail };
  }

  /** Every loop of this node as operators read it (`tollgate status`): last run, lag, failures, last error. */
  report(now = Date.now()) {
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return [...this.states.values()].map((state) => ({
      name: state.name,
      leader: state.leader,
      active: state.active,
      intervalMs: state.intervalMs,
      lastRunAt: iso(state.lastRunAt),
      lagMs: lagOf(state, now),
      consecutiveFailures: state.consecutiveFailures,
      lastError: state.lastError ? { message: state.lastError.message, at: iso(state.lastError.at) } : null,
    }));
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
    const state = this.states.get(loop.name)!;
    Object.assign(state, { active: true, lastOkAt: Date.now(), consecutiveFailures: 0 });
    try {
      while (!signal.aborted && !lost()) {
        let more = false;
        try {
          more = (await loop.run(signal)) === true;
          state.consecutiveFailures = 0;
          state.lastOkAt = Date.now();
        } catch (error) {
          state.consecutiveFailures += 1;
          // Shown by `tollgate status`: an RPC error's text quotes the URL and its key (log-redaction.ts).
          state.lastError = { message: errorText(error), at: Date.now() };
          this.log.error({ err: error, loop: loop.name }, 'background loop failed');
        }
        state.lastRunAt = Date.now();
        const failures = state.consecutiveFailures;
        // The sleep is not lag: the good run is dated when the sleep ends.
        if (!more) {
          await this.sleep(loop, failures ? Math.min(loop.intervalMs * 2 ** failures, 60_000) : loop.intervalMs);
          if (!failures) state.lastOkAt = Date.now();
        }
      }
    } finally {
      state.active = false;
    }
  }

  /** Ends at once once stopping: a run under way when stop() came must not go on to sleep a whole interval. */
  private sleep(loop: BackgroundLoop, ms: number): Promise<void> {
    if (this.controller.signal.aborted) return Promise.resolve();
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
