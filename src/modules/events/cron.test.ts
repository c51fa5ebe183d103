import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { CronDefinitionError, latestTickUpTo, nextTick, parseCron } from './cron.js';

describe('cron', () => {
  it('needs exactly five fields and a known IANA zone', () => {
    for (const accepted of ['0 9 * * *', '*/15 8-18 * * MON-FRI', '0,30 9 1,15 jan-jun,dec 0', '5 4 * * sun', '0 0 */2 * 1-5/2', '0 9 L * *', '0 9 * * 5#3']) {
      expect(() => parseCron(accepted, 'Europe/Paris')).not.toThrow();
    }
    for (const [expression, timezone, field] of [
      ['0 0 9 * * *', 'UTC', 'expression'],
      ['@daily', 'UTC', 'expression'],
      ['0 25 * * *', 'UTC', 'expression'],
      ['0 9 ? * *', 'UTC', 'expression'],
      ['0 9 * * ?', 'UTC', 'expression'],
      ['0 9 * * *', 'Nowhere/City', 'timezone'],
    ] as const) {
      const error = (() => {
        try {
          parseCron(expression, timezone);
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(CronDefinitionError);
      expect((error as CronDefinitionError).field).toBe(field);
    }
  });

  it('gives UTC the same ticks on its fixed-offset path as croner’s IANA path', () => {
    for (const expression of ['* * * * *', '*/7 3-5 * * *', '0 0 29 2 *', '15 3 * * MON-FRI', '0 9 L * *', '30 23 31 12 *', '0 12 * * 5#3']) {
      const fast = parseCron(expression, 'UTC');
      const zoned = new Cron(expression, { timezone: 'UTC', paused: true });
      for (let at = new Date('2023-12-31T22:00:00Z'), n = 0; n < 200; n++) {
        const next = nextTick(fast, at)!;
        expect(next.toISOString()).toBe(zoned.nextRun(at)!.toISOString());
        at = next;
      }
    }
  });

  it('moves a local time skipped by the spring jump to just after it, and fires a repeated one once', () => {
    const skipped = parseCron('30 2 * * *', 'America/New_York');
    expect(nextTick(skipped, new Date('2026-03-08T05:00:00Z'))?.toISOString()).toBe('2026-03-08T07:30:00.000Z');
    const repeated = parseCron('30 1 * * *', 'America/New_York');
    expect(nextTick(repeated, new Date('2026-11-01T04:00:00Z'))?.toISOString()).toBe('2026-11-01T05:30:00.000Z');
    expect(nextTick(repeated, new Date('2026-11-01T05:30:00Z'))?.toISOString()).toBe('2026-11-02T06:30:00.000Z');
  });

  it('finds the latest missed tick quickly, even far back', () => {
    const everyMinute = parseCron('* * * * *', 'UTC');
    const started = Date.now();
    expect(latestTickUpTo(everyMinute, new Date('2025-01-01T00:00:00Z'), new Date('2026-03-05T10:20:30Z')).toISOString()).toBe(
      '2026-03-05T10:20:00.000Z',
    );
    expect(Date.now() - started).toBeLessThan(1000);
    const yearly = parseCron('0 0 1 1 *', 'UTC');
    expect(latestTickUpTo(yearly, new Date('2020-01-01T00:00:00Z'), new Date('2026-03-05T00:00:00Z')).toISOString()).toBe(
      '2026-01-01T00:00:00.000Z',
    );
    const due = new Date('2026-03-05T10:00:00Z');
    expect(latestTickUpTo(parseCron('0 * * * *', 'UTC'), due, due).toISOString()).toBe(due.toISOString());
  });
});
