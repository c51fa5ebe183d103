import { describe, expect, it } from 'vitest';
import { DrizzleQueryError } from 'drizzle-orm/errors';
import { candleBatches, CandleFileError, candlesFromWire, importFailureText, parseCandleFile } from './candle-file.js';

const H = 3_600_000;
const T0 = Date.UTC(2020, 1, 24); // a whole hour

describe('parseCandleFile', () => {
  it('reads the exchange CSV with Unix ms, Unix seconds or ISO timestamps, with or without a header, oldest first', () => {
    const ms = `timestamp,open,high,low,close,volume\n${T0 + H},2,3,1,2.5,10\n${T0},1,2,0.5,1.5,7.25\n`;
    const seconds = `${T0 / 1000},1,2,0.5,1.5,7.25\r\n${(T0 + H) / 1000},2,3,1,2.5,10`;
    const iso = `Date,Open,High,Low,Close,Volume\n2020-02-24 00:00:00,1,2,0.5,1.5,7.25\n2020-02-24T01:00:00Z,2,3,1,2.5,10\n`;
    const expected = [
      { start: T0, open: '1', high: '2', low: '0.5', close: '1.5', volume: '7.25' },
      { start: T0 + H, open: '2', high: '3', low: '1', close: '2.5', volume: '10' },
    ];
    for (const text of [ms, seconds, iso]) expect(parseCandleFile(text, '1h')).toEqual(expected);
  });

  it("reads Binance's kline files: microsecond timestamps, twelve columns, with or without their header", () => {
    // data.binance.vision spot klines since 2025: open_time in microseconds, then OHLCV, close_time and six more.
    const t = Date.UTC(2025, 0, 1);
    const lines = [
      `${t * 1000},93576.00000000,94509.42000000,93489.03000000,94401.14000000,2122.36042000,${(t + H) * 1000 - 1},199713190.45573520,298493,1069.52627000,100692427.76993230,0`,
      `${(t + H) * 1000},94401.13000000,94543.00000000,94182.00000000,94300.01000000,1003.08030000,${(t + 2 * H) * 1000 - 1},94659316.56318340,169046,491.71519000,46413577.02327260,0`,
    ];
    const header = 'open_time,open,high,low,close,volume,close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore';
    const expected = [
      { start: t, open: '93576.00000000', high: '94509.42000000', low: '93489.03000000', close: '94401.14000000', volume: '2122.36042000' },
      { start: t + H, open: '94401.13000000', high: '94543.00000000', low: '94182.00000000', close: '94300.01000000', volume: '1003.08030000' },
    ];
    expect(parseCandleFile(lines.join('\n'), '1h')).toEqual(expected);
    expect(parseCandleFile([header, ...lines].join('\r\n'), '1h')).toEqual(expected);
    // The millisecond files Binance wrote before 2025 read the same.
    expect(parseCandleFile(lines.map((l) => l.replace(/^(\d+)000,/, '$1,')).join('\n'), '1h')).toEqual(expected);
  });

  it('refuses a file whose spacing contradicts the interval, naming the interval it has', () => {
    const series = (count: number, stepMs: number, skip: number[] = []) =>
      Array.from({ length: count }, (_, i) => i)
        .filter((i) => !skip.includes(i))
        .map((i) => `${T0 + i * stepMs},1,2,0.5,1.5,1`)
        .join('\n');
    // Hourly candles named 1m would all be aligned, and would read as 1m candles with 59 missing out of 60.
    expect(() => parseCandleFile(series(48, H), '1m')).toThrow('the candles are 1h apart (detected interval 1h), not 1m: import it with --interval 1h');
    expect(() => parseCandleFile(series(48, H), '1d')).toThrow('detected interval 1h');
    expect(() => parseCandleFile(series(30, 60_000), '1h')).toThrow('the candles are 1m apart (detected interval 1m), not 1h: import it with --interval 1m');
    expect(() => parseCandleFile(series(30, 4 * H), '1h')).toThrow('the candles are 4h apart (detected interval 4h), not 1h (imports take 1m, 5m, 15m, 1h, 1d)');
    // Gaps (an exchange's outage) do not move the usual spacing; one candle has none.
    expect(parseCandleFile(series(48, H, [3, 4, 5, 20, 30, 31]), '1h')).toHaveLength(42);
    expect(parseCandleFile(series(1, H), '1d')).toHaveLength(1);
  });

  it('refuses timestamps outside 1970 to 9999 instead of writing them', () => {
    expect(() => parseCandleFile('1735689600000000000,1,2,0.5,1.5,1', '1h')).toThrow('line 1: timestamp 1735689600000000000 has 19 digits');
    expect(() => parseCandleFile(`${T0},1,2,0.5,1.5,1\n+012000-01-01T00:00:00Z,1,2,0.5,1.5,1`, '1h')).toThrow('line 2: timestamp +012000-01-01T00:00:00Z is +012000-01-01T00:00:00.000Z, outside 1970 to 9999');
    expect(() => parseCandleFile('1969-12-31T23:00:00Z,1,2,0.5,1.5,1', '1h')).toThrow('outside 1970 to 9999');
  });

  it("reads freqtrade's JSON, numbers kept as written (no exponent)", () => {
    const text = JSON.stringify([[T0, 0.0000001, 0.0000002, 0.00000005, 0.00000015, 12]]);
    expect(parseCandleFile(text, '1h')).toEqual([{ start: T0, open: '0.0000001', high: '0.0000002', low: '0.00000005', close: '0.00000015', volume: '12' }]);
  });

  it('refuses what is not a candle series, naming the line', () => {
    const cases: Array<[string, string, RegExp]> = [
      [`${T0 + 60_000},1,2,0.5,1.5,1`, '1h', /line 1: 2020-02-24T00:01:00.000Z is not the start of a 1h candle/],
      [`${T0},1,2,0.5,1.5,1\n${T0},1,2,0.5,1.5,1`, '1h', /line 2: a second candle/],
      [`${T0},1,2,1.2,1.5,1`, '1h', /line 1: low 1.2, open 1, close 1.5 and high 2 are not a candle/],
      [`${T0},1,2,0,1.5,1`, '1h', /are not a candle/],
      [`${T0},1,2,0.5,-1,1`, '1h', /close "-1" is not a non-negative decimal/],
      [`${T0},1,2,0.5`, '1h', /line 1: 4 columns/],
      ['price,open,high,low,close,volume\n', '1h', /the header must be timestamp,open,high,low,close,volume/],
      [`yesterday-ish,1,2,0.5,1.5,1`, '1h', /the header must be/],
      [`${T0},1,2,0.5,1.5,1`, '2h', /unknown interval 2h/],
      ['timestamp,open,high,low,close,volume\n', '1h', /no candles/],
      ['[[1, 2]]', '1h', /entry 0: expected \[ms, open/],
      ['[1,', '1h', /not JSON/],
    ];
    for (const [text, interval, message] of cases) expect(() => parseCandleFile(text, interval), text).toThrow(message);
    expect(() => parseCandleFile('[]', '1h')).toThrow(CandleFileError);
  });
});

describe('candle batches over the admin socket', () => {
  it('split under the byte budget and read back to the same rows, checked again', () => {
    const rows = Array.from({ length: 2_000 }, (_, i) => ({ start: T0 + i * H, open: '9977.24', high: '10025', low: '9947.75', close: '9983.15', volume: '64.4723640031' }));
    const batches = candleBatches(rows, 8 * 1024);
    expect(batches.length).toBeGreaterThan(10);
    for (const batch of batches) expect(JSON.stringify(batch).length).toBeLessThanOrEqual(8 * 1024);
    expect(batches.flatMap((batch) => candlesFromWire(batch, '1h'))).toEqual(rows);
    expect(() => candlesFromWire([[T0, '1', '2', '3', '1.5', '1']], '1h')).toThrow(/are not a candle/);
    expect(() => candlesFromWire([['x', '1', '2', '0.5', '1.5', '1']], '1h')).toThrow(/candle 0: expected/);
  });
});

describe('importFailureText', () => {
  it("is one line, the database's own words and never the statement or its parameters", () => {
    const cause = Object.assign(new Error('date/time field value out of range: "+056971-10-25T00:00:00.000Z"'), { code: '22008' });
    const failed = new DrizzleQueryError('insert into "trading_candles" ("symbol", "interval") values ($1, $2)', ['BTC-USD', '1h'], cause);
    expect(importFailureText(failed)).toBe('the database refused the candles: date/time field value out of range: "+056971-10-25T00:00:00.000Z"');
    expect(importFailureText(new Error('Failed query: insert into "trading_candles"\nparams: BTC-USD'))).toBe('the database refused the candles (see the instance log)');
    expect(importFailureText(new Error('connect ECONNREFUSED 127.0.0.1:1\n    at pg-pool/index.js:45:11'))).toBe('connect ECONNREFUSED 127.0.0.1:1 at pg-pool/index.js:45:11');
  });
});
