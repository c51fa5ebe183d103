import { sql, type SQL } from 'drizzle-orm';

/** Time source injected everywhere a rule depends on "now", so tests can move time. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests set and advance by hand. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: Date | string = new Date()) {
    this.current = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  set(at: Date | string): void {
    this.current = new Date(at).getTime();
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/**
 * The database's now() as a SQL expression, for statements that decide a lease or an expiry: every node
 * then agrees whatever its own clock says. A test clock moved by hand shifts it by the same amount (with
 * the system clock the shift is 0), so tests can still move time.
 */
export function databaseNow(clock: Clock): SQL {
  const shiftMs = clock.now().getTime() - Date.now();
  return shiftMs === 0 ? sql`now()` : sql`(now() + ${shiftMs} * interval '1 millisecond')`;
}
