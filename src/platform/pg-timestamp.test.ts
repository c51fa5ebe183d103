import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseTimestamptz } from './pg-timestamp.js';

const driver = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date | number;

/** What PostgreSQL writes for an instant at a UTC offset (in minutes), with `fraction` digits of seconds. */
function pgText(ms: number, offsetMinutes: number, fraction: string): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().replace('T', ' ').slice(0, 19);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = abs % 60 ? `:${String(abs % 60).padStart(2, '0')}` : '';
  return `${local}${fraction ? `.${fraction}` : ''}${sign}${hh}${mm}`;
}

describe('parseTimestamptz', () => {
  it('reads what the driver reads, for the shapes PostgreSQL writes', () => {
    const samples = [
      '2026-11-30 03:36:20.123456+00',
      '2026-11-30 03:36:20.1+00',
      '2026-11-30 03:36:20.05+00',
      '2026-11-30 03:36:20.999999+00',
      '2026-11-30 03:36:20+00',
      '2026-03-08 13:00:00.5+05:30',
      '1999-12-31 23:59:59.001-08',
      '2024-02-29 00:00:00-03:30',
      '1883-11-18 12:03:58+00:03:58',
      '1000-01-01 00:00:00+00',
      '9999-12-31 23:59:59.999999+00',
    ];
    for (const text of samples) expect(parseTimestamptz(text).getTime(), text).toBe((driver(text) as Date).getTime());
  });

  it('matches the driver over random instants, offsets and precisions', () => {
    let seed = 7;
    const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let n = 0; n < 5000; n++) {
      const ms = Math.floor(next() * 4e12) - 1e12;
      const offset = Math.round((next() - 0.5) * 28) * 30;
      const fraction = String(Math.floor(next() * 1e6)).padStart(6, '0').slice(0, Math.floor(next() * 7)).replace(/0+$/, '');
      const text = pgText(ms, offset, fraction);
      expect(parseTimestamptz(text).getTime(), text).toBe((driver(text) as Date).getTime());
    }
  });

  it('reads the shape inside JSON (a T, a colon in the offset) as Date reads it', () => {
    let seed = 3;
    const next = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let n = 0; n < 2000; n++) {
      const offset = Math.round((next() - 0.5) * 28) * 30;
      const text = pgText(Math.floor(next() * 4e12) - 1e12, offset, String(Math.floor(next() * 1e6)).padStart(6, '0').slice(0, 1 + Math.floor(next() * 6))).replace(' ', 'T');
      const json = /[+-]\d\d$/.test(text) ? `${text}:00` : text;
      expect(parseTimestamptz(json).getTime(), json).toBe(new Date(json).getTime());
    }
  });

  it("leaves other shapes to the driver's parser", () => {
    for (const text of ['infinity', '-infinity', '0044-03-15 12:00:00+00 BC', '0099-01-01 00:00:00+00', '12026-01-01 00:00:00+00', '2026-11-30 03:36:20.+00', '2026-11-30 03:36:20Z']) {
      const ours = parseTimestamptz(text) as unknown;
      const theirs = driver(text) as unknown;
      expect(ours instanceof Date ? ours.getTime() : ours, text).toEqual(theirs instanceof Date ? theirs.getTime() : theirs);
    }
  });
});
