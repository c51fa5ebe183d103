import { sql } from 'drizzle-orm';
import type { Db } from '../../../platform/db.js';
import { rowsOf, toDate, type Timestamp } from '../../../platform/sql-rows.js';
import { IMPORT_INTERVALS, type CandleRow } from './candle-file.js';
import type { Candle } from './market-data.js';
import { tradingCandles } from '../tables.js';

/** Candles written per INSERT (eight parameters each, well under PostgreSQL's 65,535). */
const CHUNK = 1_000;

/** A run of consecutive candles of one symbol and interval. */
export interface CoveredRange {
  from: string;
  /** The start of the last candle of the run. */
  to: string;
  candles: number;
}

/** The intervals with their lengths, for statements that step through time. */
const INTERVAL_MINUTES = sql.raw(
  `(values ${Object.entries(IMPORT_INTERVALS)
    .map(([name, minutes]) => `('${name}', ${minutes})`)
    .join(', ')})`,
);

/** Imported candles (tables.ts, tradingCandles): written by the import, read by the `imported` feed and backtests. */
export class CandleStore {
  constructor(private readonly db: Db) {}

  /** Writes the candles, replacing any stored for the same starts; answers how many were written. */
  async upsert(symbol: string, interval: string, rows: readonly CandleRow[], now: Date): Promise<number> {
    for (let i = 0; i < rows.length; i += CHUNK) {
      await this.db
        .insert(tradingCandles)
        .values(rows.slice(i, i + CHUNK).map((row) => ({ symbol, interval, ...row, start: new Date(row.start), importedAt: now })))
        .onConflictDoUpdate({
          target: [tradingCandles.symbol, tradingCandles.interval, tradingCandles.start],
          set: { open: sql`excluded.open`, high: sql`excluded.high`, low: sql`excluded.low`, close: sql`excluded.close`, volume: sql`excluded.volume`, importedAt: now },
        });
    }
    return rows.length;
  }

  /** Every symbol and interval with its runs of consecutive candles (a gap starts a new run). */
  async coverage(): Promise<Array<{ symbol: string; interval: string; ranges: CoveredRange[] }>> {
    const rows = await rowsOf<{ symbol: string; interval: string; from: Timestamp; to: Timestamp; candles: number | string }>(
      this.db,
      sql`select symbol, interval, min(start) as "from", max(start) as "to", count(*) as candles
            from (select c.symbol, c.interval, c.start,
                         c.start - (row_number() over (partition by c.symbol, c.interval order by c.start)) * i.minutes * interval '1 minute' as island
                    from trading_candles c join ${INTERVAL_MINUTES} as i(name, minutes) on i.name = c.interval) runs
           group by symbol, interval, island
           order by symbol, interval, min(start)`,
    );
    const out: Array<{ symbol: string; interval: string; ranges: CoveredRange[] }> = [];
    for (const row of rows) {
      const range = { from: toDate(row.from).toISOString(), to: toDate(row.to).toISOString(), candles: Number(row.candles) };
      const last = out.at(-1);
      if (last && last.symbol === row.symbol && last.interval === row.interval) last.ranges.push(range);
      else out.push({ symbol: row.symbol, interval: row.interval, ranges: [range] });
    }
    return out;
  }

  /** Whether any candle of the symbol is stored. */
  async has(symbol: string): Promise<boolean> {
    const rows = await rowsOf<{ one: number }>(this.db, sql`select 1 as one from trading_candles where symbol = ${symbol} limit 1`);
    return rows.length === 1;
  }

  /** The first candle start within the ranges (each [from, to], stepping by the interval) with no candle stored, and how many are missing. */
  async gap(symbol: string, interval: string, ranges: ReadonlyArray<{ from: Date; to: Date }>): Promise<{ first: Date; missing: number } | null> {
    if (ranges.length === 0) return null;
    const step = `${IMPORT_INTERVALS[interval]!} minutes`;
    const rows = await rowsOf<{ first: Timestamp; missing: number | string }>(
      this.db,
      sql`select min(g) as first, count(*) as missing
            from unnest(${sql.param(ranges.map((r) => r.from.toISOString()))}::timestamptz[], ${sql.param(ranges.map((r) => r.to.toISOString()))}::timestamptz[]) as r(f, t),
                 generate_series(r.f, r.t, ${step}::interval) g
           where not exists (select 1 from trading_candles c where c.symbol = ${symbol} and c.interval = ${interval} and c.start = g)
          having count(*) > 0`,
    );
    const row = rows[0];
    return row ? { first: toDate(row.first), missing: Number(row.missing) } : null;
  }

  /** The `count` candles of the interval starting at or before `lastStart`, oldest first. */
  async candles(symbol: string, interval: string, lastStart: Date, count: number): Promise<Candle[]> {
    const rows = await rowsOf<{ start: Timestamp; open: string; high: string; low: string; close: string }>(
      this.db,
      sql`select start, open, high, low, close from trading_candles
           where symbol = ${symbol} and interval = ${interval} and start <= ${lastStart.toISOString()}
           order by start desc limit ${count}`,
    );
    return rows.reverse().map((r) => ({ start: toDate(r.start).toISOString(), open: Number(r.open), high: Number(r.high), low: Number(r.low), close: Number(r.close) }));
  }

  /** Every candle of the interval starting in [from, to], oldest first: a replay's window read at once (memo-feed.ts). */
  async range(symbol: string, interval: string, from: Date, to: Date): Promise<Candle[]> {
    const rows = await rowsOf<{ start: Timestamp; open: string; high: string; low: string; close: string }>(
      this.db,
      sql`select start, open, high, low, close from trading_candles
           where symbol = ${symbol} and interval = ${interval} and start >= ${from.toISOString()} and start <= ${to.toISOString()}
           order by start`,
    );
    return rows.map((r) => ({ start: toDate(r.start).toISOString(), open: Number(r.open), high: Number(r.high), low: Number(r.low), close: Number(r.close) }));
  }

  /** lastClose at each instant, in one statement: a replay's prices read at once (memo-feed.ts). */
  async lastCloses(symbol: string, ats: readonly Date[]): Promise<Array<number | null>> {
    if (ats.length === 0) return [];
    const rows = await rowsOf<{ n: number | string; close: string | null }>(
      this.db,
      sql`select t.n, c.close from unnest(${sql.param(ats.map((at) => at.toISOString()))}::timestamptz[]) with ordinality as t(at, n)
          left join lateral (
            select c.close from ${INTERVAL_MINUTES} as i(name, minutes)
            cross join lateral (
              select close, start + i.minutes * interval '1 minute' as ends from trading_candles
               where symbol = ${symbol} and interval = i.name and start <= t.at - i.minutes * interval '1 minute'
               order by start desc limit 1) c
            order by c.ends desc, i.minutes limit 1) c on true
          order by t.n`,
    );
    return rows.map((r) => (r.close === null ? null : Number(r.close)));
  }

  /** The close of the latest candle, of any interval, that had closed by `at`; null when none had. */
  async lastClose(symbol: string, at: Date): Promise<number | null> {
    const rows = await rowsOf<{ close: string }>(
      this.db,
      sql`select c.close from ${INTERVAL_MINUTES} as i(name, minutes)
          cross join lateral (
            select close, start + i.minutes * interval '1 minute' as ends from trading_candles
             where symbol = ${symbol} and interval = i.name and start <= ${at.toISOString()}::timestamptz - i.minutes * interval '1 minute'
             order by start desc limit 1) c
          order by c.ends desc, i.minutes limit 1`,
    );
    return rows[0] ? Number(rows[0].close) : null;
  }
}
