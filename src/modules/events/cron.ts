import { Cron } from 'croner';

// Cron arithmetic of schedules, over croner: 5 fields (minute hour day-of-month month day-of-week)
// evaluated as wall-clock time in an IANA zone. croner moves a local time that a DST jump skips to
// the first instant after the jump, and fires a repeated local time once (its first occurrence).

export class CronDefinitionError extends Error {
  constructor(
    readonly field: 'expression' | 'timezone',
    message: string,
  ) {
    super(message);
  }
}

export function isValidTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/Zulu', 'Zulu', 'Etc/Universal', 'Universal', 'Etc/GMT', 'GMT']);

/** A paused croner job for the definition; throws CronDefinitionError naming the bad field. */
export function parseCron(expression: string, timezone: string): Cron {
  if (!isValidTimeZone(timezone)) throw new CronDefinitionError('timezone', `unknown IANA time zone: ${timezone}`);
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) throw new CronDefinitionError('expression', 'a cron expression has exactly 5 fields: minute hour day-of-month month day-of-week');
  // croner reads `?` as "the current value" (`0 9 ? * *` would mean today's date, not any day): refused.
  if (expression.includes('?')) throw new CronDefinitionError('expression', '"?" is not supported: use * for "any"');
  try {
    // UTC has no offset changes: croner's fixed offset gives the same ticks ~100× faster than its IANA path.
    return new Cron(fields.join(' '), { ...(UTC_ZONES.has(timezone) ? { utcOffset: 0 } : { timezone }), paused: true });
  } catch (error) {
    throw new CronDefinitionError('expression', error instanceof Error ? error.message : String(error));
  }
}

/** The first tick strictly after `after`; null when the expression never fires again. */
export function nextTick(cron: Cron, after: Date): Date | null {
  return cron.nextRun(after);
}

// Windows tried, smallest first, when looking back for the latest missed tick: walking forward
// from the start of the first window that holds a tick stays short for any expression.
const LOOKBACK_WINDOWS_MS = [60e3, 3600e3, 86400e3, 32 * 86400e3, 367 * 86400e3, Number.POSITIVE_INFINITY];

/**
 * The last `limit` ticks in [first, now], oldest first, where `first` (<= now) is itself a tick:
 * the ticks missed during downtime. croner has no "previous tick" arithmetic, so this walks forward
 * from the smallest window that holds `limit` ticks (or from `first`).
 */
export function ticksUpTo(cron: Cron, first: Date, now: Date, limit: number): Date[] {
  for (const windowMs of LOOKBACK_WINDOWS_MS) {
    const from = Math.max(first.getTime(), now.getTime() - windowMs);
    const ticks: Date[] = [];
    let cursor = new Date(from - 1);
    for (;;) {
      const next = cron.nextRun(cursor);
      if (!next || next.getTime() > now.getTime()) break;
      ticks.push((cursor = next));
    }
    if (ticks.length >= limit || from === first.getTime()) return ticks.slice(-limit);
  }
  return [];
}

/** The latest tick in [first, now]: the one tick fired after downtime by default. */
export function latestTickUpTo(cron: Cron, first: Date, now: Date): Date {
  return ticksUpTo(cron, first, now, 1)[0] ?? first;
}
