// `tollgate trading import` of the files operators have (issue 42, item 9): Binance's kline CSVs with
// microsecond timestamps land on their hours; a file whose spacing contradicts --interval is refused naming the
// interval it has; and every failure, the file's, the instance's or the database's, is one line on stderr.
// On PostgreSQL (DATABASE_URL) the CLI and the instance use a fresh database of the server; else the data dir's.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { openTestDatabase } from '../helpers/database.js';
import { freePort } from '../wallets/helpers.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

const HOUR = 3_600_000;
const T = Date.UTC(2025, 0, 1);

/** A day of Binance spot klines as data.binance.vision writes them since 2025: microseconds, twelve columns, no header. */
function binanceKlines(hours: number, stepMs = HOUR): string {
  return Array.from({ length: hours }, (_, i) => {
    const open = T + i * stepMs;
    const price = (93_000 + i * 10).toFixed(8);
    const high = (93_050 + i * 10).toFixed(8);
    const low = (92_950 + i * 10).toFixed(8);
    return `${open * 1000},${price},${high},${low},${price},12.50000000,${(open + stepMs) * 1000 - 1},1162500.00000000,1000,6.25000000,581250.00000000,0`;
  }).join('\n');
}

/** stderr of a failed run: exactly one line, without a stack or a statement. */
function oneLine(result: { code: number; stderr: string }): string {
  expect(result.code).not.toBe(0);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/insert into|select |Failed query|params:|\n\s+at /);
  return lines[0]!;
}

describe('trading import', () => {
  it('imports Binance microsecond klines on their hours, refuses a contradicting interval by name, and fails in one line', { timeout: 240_000 }, async () => {
    const database = await openTestDatabase({ migrate: false });
    try {
      const dataDir = dirs.migrated();
      const files = dirs.create();
      const env = { TOLLGATE_DATA_DIR: dataDir, API_PORT: String(await freePort()), FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', ...(database.url ? { DATABASE_URL: database.url } : {}) };
      const write = (name: string, body: string) => {
        const file = path.join(files, name);
        fs.writeFileSync(file, body);
        return file;
      };
      const importing = (file: string, interval = '1h', symbol = 'BTC-USD', extra: Record<string, string> = {}) => cli({ ...env, ...extra }, 'trading', 'import', '--symbol', symbol, '--interval', interval, file);

      // No instance: the CLI opens the database itself.
      const day = write('BTCUSDT-1h-2025-01-01.csv', binanceKlines(24));
      const imported = await importing(day);
      expect(imported).toMatchObject({ code: 0, stderr: '' });
      expect(imported.stdout).toContain('imported 24 1h candles of BTC-USD: 2025-01-01T00:00:00.000Z to 2025-01-01T23:00:00.000Z');

      // The file's faults, found before anything is written.
      expect(oneLine(await importing(day, '1m'))).toBe('tollgate: the candles are 1h apart (detected interval 1h), not 1m: import it with --interval 1h');
      expect(oneLine(await importing(write('4h.csv', binanceKlines(12, 4 * HOUR)), '1h'))).toBe('tollgate: the candles are 4h apart (detected interval 4h), not 1h (imports take 1m, 5m, 15m, 1h, 1d)');
      expect(oneLine(await importing(write('nanos.csv', `${T}000000,1,2,0.5,1.5,1`)))).toBe('tollgate: line 1: timestamp 1735689600000000000 has 19 digits: Unix seconds, milliseconds or microseconds have at most 17');
      // The database unreachable: what pg says, in one line.
      expect(oneLine(await importing(day, '1h', 'BTC-USD', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }))).toMatch(/^tollgate: connect ECONNREFUSED 127\.0\.0\.1:1$/);

      const server = await startServer({ config: loadConfig({ ...env, LOG_LEVEL: 'silent' }), roles: ['api'], log: pino({ level: 'silent' }) });
      try {
        // Through the running instance: its refusal is one line too (no usage text after it).
        expect(oneLine(await importing(day, '1h', 'btc'))).toBe('tollgate: --symbol must look like BTC-USD (capitals and digits, an optional -QUOTE)');
        // The next day through the instance, then what it covers: the microseconds read as the hours they are.
        const next = write('BTCUSDT-1h-2025-01-02.csv', binanceKlines(48).split('\n').slice(24).join('\n'));
        expect(await importing(next)).toMatchObject({ code: 0, stdout: expect.stringContaining('imported 24 1h candles of BTC-USD: 2025-01-02T00:00:00.000Z to 2025-01-02T23:00:00.000Z') });
        const token = await server.ctx.devIdentity!.sign('trader');
        const coverage = await fetch(`${server.urls.api}/agentic-trading/market-data`, { headers: { authorization: `Bearer ${token}` } });
        expect(((await coverage.json()) as any).data.imported).toEqual([{ symbol: 'BTC-USD', interval: '1h', ranges: [{ from: '2025-01-01T00:00:00.000Z', to: '2025-01-02T23:00:00.000Z', candles: 48 }] }]);
      } finally {
        await server.stop();
      }
    } finally {
      await database.close();
    }
  });
});
