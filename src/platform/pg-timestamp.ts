import pg from 'pg';

// node-postgres parses every timestamptz it reads with postgres-date's regular expressions, 0.6–0.8 µs a
// value; a row of events carries up to seven. PostgreSQL writes them in one shape (DateStyle ISO, or inside
// JSON with a T and a colon in the offset), which this reads digit by digit (0.2 µs); anything else (years
// before 1000 or past 9999, BC, infinity) goes to the caller's fallback, by default the driver's own parser.

const driverParser = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date;

const MS_PLACE = [100, 10, 1];

/** The digits of `text` from `from` to `to` (exclusive) as a number; NaN if any is not a digit. */
function digits(text: string, from: number, to: number): number {
  let value = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    value = value * 10 + d;
  }
  return value;
}

/**
 * A timestamptz as PostgreSQL writes it: `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]` (a `T` for the space in
 * JSON). Milliseconds are truncated, as the driver's parser does.
 */
export function parseTimestamptz(text: string, fallback: (text: string) => Date = driverParser): Date {
  const separator = text.charCodeAt(10);
  if (text.length < 22 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || (separator !== 32 && separator !== 84) || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return fallback(text);
  }
  const year = digits(text, 0, 4);
  let i = 19;
  let ms = 0;
  if (text.charCodeAt(i) === 46) {
    const start = ++i;
    for (let d = text.charCodeAt(i) - 48; d >= 0 && d <= 9; d = text.charCodeAt(++i) - 48) {
      if (i - start < 3) ms += d * MS_PLACE[i - start];
    }
    if (i === start) return fallback(text);
  }
  const sign = text.charCodeAt(i) === 43 ? 1 : text.charCodeAt(i) === 45 ? -1 : 0;
  const rest = text.length - i - 1;
  if (sign === 0 || year < 1000 || (rest !== 2 && rest !== 5 && rest !== 8)) return fallback(text);
  const offsetHours = digits(text, i + 1, i + 3);
  const offsetMinutes = rest >= 5 && text.charCodeAt(i + 3) === 58 ? digits(text, i + 4, i + 6) : rest >= 5 ? NaN : 0;
  const offsetSeconds = rest === 8 && text.charCodeAt(i + 6) === 58 ? digits(text, i + 7, i + 9) : rest === 8 ? NaN : 0;
  const utc = Date.UTC(year, digits(text, 5, 7) - 1, digits(text, 8, 10), digits(text, 11, 13), digits(text, 14, 16), digits(text, 17, 19), ms);
  const time = utc - sign * (offsetHours * 3600 + offsetMinutes * 60 + offsetSeconds) * 1000;
  return Number.isNaN(time) ? fallback(text) : new Date(time);
}

const parseWithDriverFallback = (text: string) => parseTimestamptz(text);

/** The driver's type parsers, with timestamptz read by parseTimestamptz (a pool's `types`). */
export const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.TIMESTAMPTZ && format !== 'binary') return parseWithDriverFallback;
    return pg.types.getTypeParser(oid, format);
  },
};
