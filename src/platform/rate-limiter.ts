import { lt, sql } from 'drizzle-orm';
import type { Db } from './db.js';
import { databaseNow, type Clock } from './clock.js';
import { rateLimitCounters } from './tables.js';

export interface RateLimitRule {
  /** Requests allowed per window. */
  limit: number;
  windowSeconds: number;
}

export interface RateLimitResult {
  allowed: boolean;
  count: number;
  retryAfterSeconds: number;
}

/**
 * Fixed-window counters in PostgreSQL, so every node shares one count. The upsert takes the
 * row lock, which makes concurrent hits on one key count exactly once each, and the window is the
 * database's (databaseNow), so nodes whose clocks disagree still share one window.
 */
export class RateLimiter {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async hit(key: string, rule: RateLimitRule): Promise<RateLimitResult> {
    const [result] = await this.hitMany([{ key, limit: rule.limit }], rule.windowSeconds);
    return result!;
  }

  /**
   * Counts one hit on each key, in one statement (one round trip however many keys), with `hit`'s
   * windows; answers in the order given. Keys must be distinct: one statement cannot update a row twice.
   * Rows are upserted in key order, so concurrent calls lock shared keys in one order and cannot deadlock.
   */
  async hitMany(hits: readonly { key: string; limit: number }[], windowSeconds: number): Promise<RateLimitResult[]> {
    if (hits.length === 0) return [];
    const keys = hits.map((h) => h.key).sort();
    if (keys.some((key, i) => key === keys[i - 1])) throw new Error(`hitMany needs distinct keys: ${keys.join(', ')}`);
    const windowMs = windowSeconds * 1000;
    const nowMs = sql`(extract(epoch from ${databaseNow(this.clock)}) * 1000)`;
    const windowStart = sql`to_timestamp(floor(${nowMs} / ${windowMs}) * ${windowMs} / 1000.0)`;
    const rows = await this.db
      .insert(rateLimitCounters)
      .values(keys.map((key) => ({ key, windowStart, count: 1 })))
      .onConflictDoUpdate({
        target: rateLimitCounters.key,
        set: {
          count: sql`case when ${rateLimitCounters.windowStart} = excluded.window_start then ${rateLimitCounters.count} + 1 else 1 end`,
          windowStart: sql`excluded.window_start`,
        },
      })
      .returning({
        key: rateLimitCounters.key,
        count: rateLimitCounters.count,
        leftMs: sql<string>`(extract(epoch from ${rateLimitCounters.windowStart}) * 1000 + ${windowMs} - ${nowMs})`,
      });
    const byKey = new Map(rows.map((row) => [row.key, row]));
    return hits.map(({ key, limit }) => {
      const row = byKey.get(key)!;
      return { allowed: row.count <= limit, count: row.count, retryAfterSeconds: Math.max(1, Math.ceil(Number(row.leftMs) / 1000)) };
    });
  }

  /** Drops counters whose window ended; the worker calls this now and then. */
  async prune(olderThanSeconds = 3600): Promise<number> {
    const cutoff = sql`${databaseNow(this.clock)} - ${olderThanSeconds} * interval '1 second'`;
    const rows = await this.db.delete(rateLimitCounters).where(lt(rateLimitCounters.windowStart, cutoff)).returning({ key: rateLimitCounters.key });
    return rows.length;
  }
}

/**
 * The same fixed windows, counted in this process only: for limits that only guard against abuse
 * of cheap work, where a database write per request would cost more than the work itself. Across
 * N nodes the effective limit is up to N × limit.
 */
export class MemoryRateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly clock: Clock) {}

  hit(key: string, rule: RateLimitRule): RateLimitResult {
    const nowMs = this.clock.now().getTime();
    const windowMs = rule.windowSeconds * 1000;
    const start = Math.floor(nowMs / windowMs) * windowMs;
    let entry = this.windows.get(key);
    if (!entry || entry.start !== start) {
      if (this.windows.size >= 100_000) this.dropEnded(start);
      entry = { start, count: 0 };
      this.windows.set(key, entry);
    }
    entry.count += 1;
    return { allowed: entry.count <= rule.limit, count: entry.count, retryAfterSeconds: Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000)) };
  }

  private dropEnded(currentStart: number): void {
    for (const [key, entry] of this.windows) if (entry.start < currentStart) this.windows.delete(key);
  }
}
