// Reads a file of candles for `tollgate trading import`: the common exchange CSV export
// (`timestamp,open,high,low,close,volume`, a header line optional, the timestamp in Unix seconds, Unix
// milliseconds, Unix microseconds or ISO 8601; further columns ignored, so Binance's kline files read as they
// are) or freqtrade's JSON (an array of `[ms, open, high, low, close, volume]`). Prices stay decimal strings as
// written: the store keeps them exact.

import { redactText } from '../../../platform/log-redaction.js';

/** An imported candle: its first instant (Unix ms) and its prices and volume as decimal strings. */
export interface CandleRow {
  start: number;
  open: string;
  high: string;
  low: string;
  close: string;
  volume: string;
}

/** The intervals an import may name, in minutes (a subset of the strategies' candle intervals). */
export const IMPORT_INTERVALS: Record<string, number> = { '1m': 1, '5m': 5, '15m': 15, '1h': 60, '1d': 1440 };

export class CandleFileError extends Error {
  override readonly name = 'CandleFileError';
}

const DECIMAL = /^\d{1,20}(\.\d{1,18})?$/;
// Unix time by its digits: seconds before 2286 have at most 10, milliseconds before 5138 at most 14 (13 today),
// microseconds (Binance's kline files since 2025) at most 17 (16 today).
const SECONDS_MAX = 9_999_999_999;
const MILLISECONDS_MAX = 99_999_999_999_999;
const MICROSECONDS_MAX = 99_999_999_999_999_999;
/** The last instant a candle may start at: 9999-12-31 (what ISO 8601 and the database's timestamps write plainly). */
const LATEST_MS = Date.UTC(9999, 11, 31);

/**
 * What a failed import prints (the CLI, the admin command): one line, and never a statement's text: a database
 * error reaches us as drizzle's DrizzleQueryError, whose message is the SQL and every parameter; its cause is
 * what the database said.
 */
export function importFailureText(error: unknown): string {
  const e = error as { message?: unknown; query?: unknown; cause?: { message?: unknown } } | null;
  const said = typeof e?.query === 'string' ? `the database refused the candles: ${String(e.cause?.message ?? 'see the instance log')}` : String(e?.message ?? error);
  const line = /^Failed query:/.test(said) ? 'the database refused the candles (see the instance log)' : said;
  return redactText(line.replace(/\s*[\r\n]+\s*/g, ' ').trim());
}

/** Parses and checks a file's candles, oldest first; the error names the line (CSV) or entry (JSON) at fault. */
export function parseCandleFile(text: string, interval: string): CandleRow[] {
  const trimmed = text.trimStart();
  const rows = trimmed.startsWith('[') ? fromFreqtradeJson(trimmed) : fromCsv(text);
  return checkCandles(rows, interval);
}

/** Candles sent over the wire (the admin socket), as `[start ms, open, high, low, close, volume]`. */
export type WireCandle = [number, string, string, string, string, string];

/** The candles in batches whose JSON stays under `maxBytes` (the admin socket takes 64 KiB a call). */
export function candleBatches(rows: readonly CandleRow[], maxBytes = 48 * 1024): WireCandle[][] {
  const batches: WireCandle[][] = [];
  let batch: WireCandle[] = [];
  let bytes = 0;
  for (const row of rows) {
    const wire: WireCandle = [row.start, row.open, row.high, row.low, row.close, row.volume];
    const size = JSON.stringify(wire).length + 1;
    if (batch.length > 0 && bytes + size > maxBytes) {
      batches.push(batch);
      [batch, bytes] = [[], 0];
    }
    batch.push(wire);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** Wire candles checked again where they are written (the socket's caller is trusted, its bytes are not). */
export function candlesFromWire(value: unknown, interval: string): CandleRow[] {
  if (!Array.isArray(value)) throw new CandleFileError('candles must be an array of [ms, open, high, low, close, volume]');
  const rows = value.map((entry: unknown, i) => {
    const where = `candle ${i}`;
    if (!Array.isArray(entry) || entry.length !== 6 || typeof entry[0] !== 'number' || !Number.isSafeInteger(entry[0])) {
      throw new CandleFileError(`${where}: expected [ms, open, high, low, close, volume]`);
    }
    return { row: rowOf([String(entry[0]), ...entry.slice(1).map(String)], where), where };
  });
  // A batch is part of a file whose spacing the CLI checked whole: two candles across a gap would look 2h apart.
  return checkCandles(rows, interval, false);
}

/**
 * Sorts the candles and checks the file's spacing against the interval (`spacing`: a whole file, not a batch of
 * one), then each candle: aligned to the interval, one per start, and a candle's shape.
 */
function checkCandles(rows: Array<{ row: CandleRow; where: string }>, interval: string, spacing = true): CandleRow[] {
  const minutes = IMPORT_INTERVALS[interval];
  if (!minutes) throw new CandleFileError(`unknown interval ${interval} (one of ${Object.keys(IMPORT_INTERVALS).join(', ')})`);
  if (rows.length === 0) throw new CandleFileError('the file holds no candles');
  rows.sort((a, b) => a.row.start - b.row.start);
  const stepMs = minutes * 60_000;
  // The file's own spacing first: 1h candles imported as 1m would all be aligned, and read as 1m candles with gaps.
  const usual = spacing ? usualSpacing(rows.map((r) => r.row.start)) : null;
  if (usual !== null && usual !== stepMs) {
    const detected = intervalText(usual);
    const hint = IMPORT_INTERVALS[detected] ? `: import it with --interval ${detected}` : ` (imports take ${Object.keys(IMPORT_INTERVALS).join(', ')})`;
    throw new CandleFileError(`the candles are ${detected} apart (detected interval ${detected}), not ${interval}${hint}`);
  }
  for (const [i, { row, where }] of rows.entries()) {
    if (row.start % stepMs !== 0) throw new CandleFileError(`${where}: ${new Date(row.start).toISOString()} is not the start of a ${interval} candle`);
    if (i > 0 && rows[i - 1]!.row.start === row.start) throw new CandleFileError(`${where}: a second candle for ${new Date(row.start).toISOString()}`);
    const [open, high, low, close] = [row.open, row.high, row.low, row.close].map(Number) as [number, number, number, number];
    if (!(low <= Math.min(open, close) && Math.max(open, close) <= high) || low <= 0) {
      throw new CandleFileError(`${where}: low ${row.low}, open ${row.open}, close ${row.close} and high ${row.high} are not a candle (0 < low ≤ open, close ≤ high)`);
    }
  }
  return rows.map((r) => r.row);
}

/** The most common distance between consecutive starts (the smaller on a tie); null under two distinct starts. */
function usualSpacing(starts: readonly number[]): number | null {
  const counts = new Map<number, number>();
  for (let i = 1; i < starts.length; i++) {
    const gap = starts[i]! - starts[i - 1]!;
    if (gap > 0) counts.set(gap, (counts.get(gap) ?? 0) + 1);
  }
  let best: [number, number] | null = null;
  for (const [gap, count] of counts) if (!best || count > best[1] || (count === best[1] && gap < best[0])) best = [gap, count];
  return best ? best[0] : null;
}

/** A length of time as an interval is written: 1m, 15m, 1h, 4h, 1d, 1w, or 90s. */
function intervalText(ms: number): string {
  for (const [unit, length] of [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % length === 0) return `${ms / length}${unit}`;
  }
  return `${ms}ms`;
}

function fromCsv(text: string): Array<{ row: CandleRow; where: string }> {
  const out: Array<{ row: CandleRow; where: string }> = [];
  for (const [index, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    const where = `line ${index + 1}`;
    if (line === '') continue;
    const cells = line.split(',').map((c) => c.trim());
    if (index === 0 && !/^\d/.test(cells[0]!)) {
      const header = cells.slice(0, 6).map((c) => c.toLowerCase()).join(',');
      if (!/^(timestamp|time|date|unix|open_time|unix timestamp),open,high,low,close,volume$/.test(header)) {
        throw new CandleFileError(`${where}: the header must be timestamp,open,high,low,close,volume (found ${cells.slice(0, 6).join(',')})`);
      }
      continue;
    }
    if (cells.length < 6) throw new CandleFileError(`${where}: ${cells.length} columns, expected timestamp,open,high,low,close,volume`);
    out.push({ row: rowOf(cells.slice(0, 6), where), where });
  }
  return out;
}

function fromFreqtradeJson(text: string): Array<{ row: CandleRow; where: string }> {
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch (error) {
    throw new CandleFileError(`not JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(entries)) throw new CandleFileError('freqtrade JSON is an array of [ms, open, high, low, close, volume]');
  return entries.map((entry, i) => {
    const where = `entry ${i}`;
    if (!Array.isArray(entry) || entry.length < 6) throw new CandleFileError(`${where}: expected [ms, open, high, low, close, volume]`);
    return { row: rowOf(entry.slice(0, 6).map((v) => (typeof v === 'number' ? numberText(v) : String(v))), where), where };
  });
}

/** A JSON number as plain decimal text (no exponent): 1e-7 → 0.0000001. */
function numberText(value: number): string {
  const text = String(value);
  if (!/e/i.test(text)) return text;
  return value.toFixed(18).replace(/\.?0+$/, '');
}

function rowOf([time, open, high, low, close, volume]: string[], where: string): CandleRow {
  const start = startOf(time!, where);
  const prices = { open: open!, high: high!, low: low!, close: close!, volume: volume! };
  for (const [name, value] of Object.entries(prices)) {
    if (!DECIMAL.test(value)) throw new CandleFileError(`${where}: ${name} ${JSON.stringify(value)} is not a non-negative decimal number`);
  }
  return { start, ...prices };
}

function startOf(time: string, where: string): number {
  const ms = parsedTime(time, where);
  if (ms < 0 || ms > LATEST_MS) throw new CandleFileError(`${where}: timestamp ${time} is ${new Date(ms).toISOString()}, outside 1970 to 9999`);
  return ms;
}

function parsedTime(time: string, where: string): number {
  if (/^\d+$/.test(time)) {
    const n = Number(time);
    if (n <= SECONDS_MAX) return n * 1000;
    if (n <= MILLISECONDS_MAX) return n;
    if (n <= MICROSECONDS_MAX) return n / 1000;
    throw new CandleFileError(`${where}: timestamp ${time} has ${time.length} digits: Unix seconds, milliseconds or microseconds have at most 17`);
  }
  // ISO 8601 or "2020-02-24 00:00:00" (UTC when no offset is written, as exchange exports mean).
  const iso = time.replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (!Number.isFinite(ms)) throw new CandleFileError(`${where}: timestamp ${JSON.stringify(time)} is neither Unix time nor ISO 8601`);
  return ms;
}
