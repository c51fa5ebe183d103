import { CLAIM_RECHECK_MS } from './limits.js';

/** One claim try: the claimed value, or null when there was nothing to claim. */
export type Attempt<T> = () => Promise<T | null>;

export interface WaitRequest<T> {
  queueId: string;
  waitMs: number;
  attempt: Attempt<T>;
  /** Hands back a value claimed for a waiter that left meanwhile (timed out, disconnected). */
  release(value: T): Promise<void>;
  signal?: AbortSignal;
}

interface Waiter {
  attempt: Attempt<unknown>;
  release(value: unknown): Promise<void>;
  deadline: number;
  done: boolean;
  finish(result: { value: unknown } | { error: unknown }): void;
}

/** The claimers of one queue waiting in this process, oldest first. */
interface Line {
  waiters: Waiter[];
  /** Claims trying right now without having waited (they may join the line). */
  trying: number;
  /** Counts wake-ups, so a claim that found nothing can tell whether it missed one while trying. */
  wakes: number;
  dispatching: boolean;
  again: boolean;
  recheck: NodeJS.Timeout | null;
}

/**
 * Long-poll claims, served first come first served per queue. A claim with nobody waiting ahead of
 * it tries at once (claims run in parallel while there is work). One that finds nothing joins the
 * queue's line; on each wake-up (a publish here, a NOTIFY from another node, or the periodic
 * re-check) the line is served in order: the head claims; on success the next one tries, on failure
 * everybody keeps waiting. No database transaction is open while anyone waits.
 */
export class ClaimWaiters {
  private readonly lines = new Map<string, Line>();
  private closed = false;

  async claim<T>(request: WaitRequest<T>): Promise<T | null> {
    const line = this.lineOf(request.queueId);
    if (line.waiters.length === 0 || this.closed) {
      const wakesBefore = line.wakes;
      line.trying += 1;
      let value: T | null;
      try {
        value = await request.attempt();
      } finally {
        line.trying -= 1;
      }
      if (value !== null || request.waitMs <= 0 || this.closed || request.signal?.aborted) {
        this.dropIfIdle(request.queueId, line);
        return value;
      }
      const waiting = this.join<T>(line, request);
      if (line.wakes !== wakesBefore) void this.dispatch(request.queueId, line);
      return waiting;
    }
    // Others wait already: queue behind them, even with waitMs 0 (then served in this round only).
    const waiting = this.join<T>(line, request);
    void this.dispatch(request.queueId, line);
    return waiting;
  }

  /** Something may be claimable on the queue now. */
  wake(queueId: string): void {
    const line = this.lines.get(queueId);
    if (!line) return;
    line.wakes += 1;
    if (line.waiters.length > 0) void this.dispatch(queueId, line);
  }

  /** Server shutdown: every waiting claim answers "no work" now. */
  close(): void {
    this.closed = true;
    for (const line of this.lines.values()) {
      for (const waiter of [...line.waiters]) waiter.finish({ value: null });
    }
  }

  /** Claims waiting in this process (for tests and metrics). */
  waitingCount(queueId?: string): number {
    if (queueId) return this.lines.get(queueId)?.waiters.length ?? 0;
    let total = 0;
    for (const line of this.lines.values()) total += line.waiters.length;
    return total;
  }

  private lineOf(queueId: string): Line {
    let line = this.lines.get(queueId);
    if (!line) {
      line = { waiters: [], trying: 0, wakes: 0, dispatching: false, again: false, recheck: null };
      this.lines.set(queueId, line);
    }
    return line;
  }

  private join<T>(line: Line, request: WaitRequest<T>): Promise<T | null> {
    return new Promise<T | null>((resolve, reject) => {
      const onAbort = () => waiter.finish({ value: null });
      const timer = setTimeout(onAbort, Math.max(request.waitMs, 0));
      const waiter: Waiter = {
        attempt: request.attempt,
        release: request.release as (value: unknown) => Promise<void>,
        deadline: Date.now() + request.waitMs,
        done: false,
        finish: (result) => {
          if (waiter.done) return;
          waiter.done = true;
          clearTimeout(timer);
          request.signal?.removeEventListener('abort', onAbort);
          const index = line.waiters.indexOf(waiter);
          if (index >= 0) line.waiters.splice(index, 1);
          this.dropIfIdle(request.queueId, line);
          if ('error' in result) reject(result.error);
          else resolve(result.value as T | null);
        },
      };
      request.signal?.addEventListener('abort', onAbort, { once: true });
      line.waiters.push(waiter);
      line.recheck ??= setInterval(() => void this.dispatch(request.queueId, line), CLAIM_RECHECK_MS);
    });
  }

  private async dispatch(queueId: string, line: Line): Promise<void> {
    if (line.dispatching) {
      line.again = true;
      return;
    }
    line.dispatching = true;
    try {
      do {
        line.again = false;
        while (line.waiters.length > 0) {
          const head = line.waiters[0];
          let value: unknown;
          try {
            value = await head.attempt();
          } catch (error) {
            head.finish({ error });
            continue;
          }
          if (value === null) break;
          if (head.done) await head.release(value).catch(() => {});
          else head.finish({ value });
        }
        // This round found nothing more: claims that would not wait longer get their answer now.
        const now = Date.now();
        for (const waiter of [...line.waiters]) if (waiter.deadline <= now) waiter.finish({ value: null });
      } while (line.again && line.waiters.length > 0);
    } finally {
      line.dispatching = false;
      this.dropIfIdle(queueId, line);
    }
  }

  private dropIfIdle(queueId: string, line: Line): void {
    if (line.waiters.length > 0) return;
    if (line.recheck) {
      clearInterval(line.recheck);
      line.recheck = null;
    }
    if (line.trying === 0 && !line.dispatching && this.lines.get(queueId) === line) this.lines.delete(queueId);
  }
}
