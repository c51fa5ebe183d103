import type { Logger } from 'pino';
import type { Database } from '../../platform/db.js';
import { EVENTS_CHANNEL, NOTIFY_WINDOW_MS } from './limits.js';

/**
 * Tells other nodes "queue <id> has a new available event" (NOTIFY), after the publishing commit and
 * outside it: a transaction that NOTIFYs holds PostgreSQL's global notify lock through its commit, so
 * notifying inside publishes would serialize every publish behind one WAL flush at a time.
 * Per queue, the first signal is sent at once and a burst after it is folded into one NOTIFY at the
 * end of a short window (a wake-up is only a hint: waiters re-check the table). PGlite is one
 * process, so there the in-process wake-up is all there is.
 */
export class QueueNotifier {
  private readonly lastSent = new Map<string, number>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(
    private readonly database: Pick<Database, 'kind' | 'notify'>,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  signal(queueId: string): void {
    if (this.database.kind !== 'postgres' || this.closed || this.pending.has(queueId)) return;
    const sinceLast = Date.now() - (this.lastSent.get(queueId) ?? 0);
    if (sinceLast >= NOTIFY_WINDOW_MS) {
      this.send(queueId);
      return;
    }
    const timer = setTimeout(() => {
      this.pending.delete(queueId);
      this.send(queueId);
    }, NOTIFY_WINDOW_MS - sinceLast);
    timer.unref();
    this.pending.set(queueId, timer);
  }

  close(): void {
    this.closed = true;
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }

  private send(queueId: string): void {
    if (this.closed) return;
    this.lastSent.set(queueId, Date.now());
    if (this.lastSent.size > 10_000) this.forgetOld();
    this.database.notify(EVENTS_CHANNEL, queueId).catch((error: unknown) => {
      // Remote waiters still re-check every second; a lost hint only delays them.
      this.log.warn({ err: error, queueId }, 'event queue notify failed');
    });
  }

  private forgetOld(): void {
    const horizon = Date.now() - NOTIFY_WINDOW_MS;
    for (const [queueId, at] of this.lastSent) if (at < horizon) this.lastSent.delete(queueId);
  }
}
