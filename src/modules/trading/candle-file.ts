// Reads a file of candles for `tollgate trading import`: the common exchange CSV export
// (`timestamp,open,high,low,close,volume`, a header line optional, the timestamp in Unix seconds, Unix
// milliseconds or ISO 8601) or freqtrade's JSON (an array of `[ms, open, high, low, close, volume]`).
// Prices stay decimal strings as written: the store keeps them exact.

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
// Unix seconds before 2286 have at most 10 digits; milliseconds have 12 or more.
const SECONDS_MAX = 9_999_999_999;

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
  return checkCandles(rows, interval);
}

/** Sorts the candles and checks each: aligned to the interval, one per start, and a candle's shape. */
function checkCandles(rows: Array<{ row: CandleRow; where: string }>, interval: string): CandleRow[] {
  const minutes = IMPORT_INTERVALS[interval];
  if (!minutes) throw new CandleFileError(`unknown interval ${interval} (one of ${Object.keys(IMPORT_INTERVALS).join(', ')})`);
  if (rows.length === 0) throw new CandleFileError('the file holds no candles');
  rows.sort((a, b) => a.row.start - b.row.start);
  const stepMs = minutes * 60_000;
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
  if (/^\d+$/.test(time)) {
    const n = Number(time);
    return n <= SECONDS_MAX ? n * 1000 : n;
  }
  // ISO 8601 or "2020-02-24 00:00:00" (UTC when no offset is written, as exchange exports mean).
  const iso = time.replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (!Number.isFinite(ms)) throw new CandleFileError(`${where}: timestamp ${JSON.stringify(time)} is neither Unix time nor ISO 8601`);
  return ms;
}
