import { describe, expect, it } from 'vitest';
import { candleBatches, CandleFileError, candlesFromWire, parseCandleFile } from './candle-file.js';

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
