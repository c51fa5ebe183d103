// Imported market data end to end, on the real public candles the repository ships (BTC-USD, 1 h,
// 2020-02-24 to 2020-03-22, test/fixtures/market-data/README.md): the CLI imports into a data dir (with
// no instance, then through a running one), the service lists what it covers, a backtest over a gap is
// 422 naming it, and a covered window answers a report, the same one every time.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { freePort } from '../wallets/helpers.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

const FIXTURE = path.resolve('test/fixtures/market-data/btc-usd-1h-2020-02-24_2020-03-22.csv');
const rows = fs.readFileSync(FIXTURE, 'utf8').trim().split('\n').slice(1);
const hour = (row: string) => new Date(Number(row.split(',')[0])).toISOString();

/** A file of some of the fixture's rows, as CSV or as freqtrade's JSON. */
function fileOf(dir: string, name: string, lines: string[], format: 'csv' | 'freqtrade' = 'csv'): string {
  const file = path.join(dir, name);
  const body = format === 'csv' ? `timestamp,open,high,low,close,volume\n${lines.join('\n')}\n` : JSON.stringify(lines.map((line) => line.split(',').map(Number)));
  fs.writeFileSync(file, body);
  return file;
}

describe('imported market data', () => {
  it('imports real candles with the CLI, lists their coverage, refuses a backtest over a gap, and reports a covered window identically twice', { timeout: 240_000 }, async () => {
    const dataDir = dirs.migrated();
    const files = dirs.create();
    const env = { TOLLGATE_DATA_DIR: dataDir, API_PORT: String(await freePort()), FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' };
    const importing = (file: string) => cli(env, 'trading', 'import', '--symbol', 'BTC-USD', '--interval', '1h', file);

    // The first three weeks, with no instance running: the CLI opens the data dir itself.
    const first = await importing(fileOf(files, 'weeks-1-3.csv', rows.slice(0, 504)));
    expect(first.stderr).toBe('');
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toContain('imported 504 1h candles of BTC-USD: 2020-02-24T00:00:00.000Z to 2020-03-15T23:00:00.000Z');
    // A broken file imports nothing and says where it broke.
    const broken = [...rows.slice(504, 506), rows[506]!.replace(/,[^,]+,/, ',-5,')];
    expect(await importing(fileOf(files, 'broken.csv', broken))).toMatchObject({ code: 1, stderr: expect.stringContaining('line 4: open "-5"') });

    const server = await startServer({ config: loadConfig({ ...env, LOG_LEVEL: 'silent' }), roles: ['api'], log: pino({ level: 'silent' }) });
    try {
      // The last week as freqtrade JSON, through the running instance, but for four hours missing.
      const missing = rows.slice(540, 544);
      const second = await importing(fileOf(files, 'week-4.json', [...rows.slice(504, 540), ...rows.slice(544)], 'freqtrade'));
      expect(second).toMatchObject({ code: 0, stdout: expect.stringContaining('imported 164 1h candles') });

      const token = await server.ctx.devIdentity!.sign('trader');
      const call = async (method: string, url: string, body?: unknown) => {
        const response = await fetch(`${server.urls.api}${url}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
        return { status: response.status, body: (await response.json()) as any };
      };
      const coverage = await call('GET', '/agentic-trading/market-data');
      expect(coverage.body.data.imported).toEqual([
        {
          symbol: 'BTC-USD',
          interval: '1h',
          ranges: [
            { from: hour(rows[0]!), to: hour(rows[539]!), candles: 540 },
            { from: hour(rows[544]!), to: hour(rows.at(-1)!), candles: 128 },
          ],
        },
      ]);

      const definition = { instructions: 'Trend follow. fast=5 slow=20 short=true', universe: ['BTC-USD'], dataSources: ['imported'], candleInterval: '1h' };
      const unquoted = await call('POST', '/agentic-trading/strategies', { name: 'eth', version: { kind: 'quant_signal', schemaVersion: 1, definition: { ...definition, universe: ['ETH-USD'] } } });
      expect(unquoted).toMatchObject({ status: 400, body: { message: expect.stringContaining('imported does not quote ETH-USD') } });
      const strategy = (await call('POST', '/agentic-trading/strategies', { name: 'btc trend', version: { kind: 'quant_signal', schemaVersion: 1, definition } })).body.data;
      // From the second day (the first day's candles feed the slow average) to the fixture's last closed hour.
      const window = { from: '2020-02-25T00:00:00.000Z', to: '2020-03-23T00:00:00.000Z', cronExpression: '0 * * * *', fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 90 };
      const gap = await call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, window);
      expect(gap).toMatchObject({ status: 422, body: { data: { reason: 'market_data_gap', symbol: 'BTC-USD', interval: '1h', firstMissing: hour(missing[0]!), missing: 4 } } });

      expect(await importing(fileOf(files, 'the-gap.csv', missing))).toMatchObject({ code: 0 });
      const report = await call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, window);
      expect(report.status).toBe(200);
      const result = report.body.data;
      expect(result).toMatchObject({ ticks: 649, stoppedAt: null, executionsTotal: 649 });
      expect(result.executions).toHaveLength(100);
      expect(result.equityCurve).toHaveLength(649);
      expect(result.equityCurve[0].at).toBe(window.from);
      expect(result.report.startEquityUsd).toBe(10_000);
      expect(result.report.trades).toBeGreaterThan(5);
      expect(result.report.closedTrades).toBeGreaterThan(2);
      expect(result.report.maxDrawdownPercent).toBeGreaterThan(0);
      expect(result.report.endEquityUsd).toBeCloseTo(result.equityCurve.at(-1).equityUsd, 6);
      expect(result.report.feesUsd).toBeCloseTo(result.book.feesUsd, 9);
      // The real prices: the first decision reads the 24 Feb 2020 closes, the crash of 12 March is inside.
      expect(result.executions[0].decision.signals[0].price).toBe(Number(rows[23]!.split(',')[4]));
      const again = await call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, window);
      expect(again.body.data).toEqual(result);
      // Executions come in pages of the same replay.
      const all = (await call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, { ...window, executionsLimit: 500 })).body.data.executions;
      const page = (await call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, { ...window, executionsOffset: 100, executionsLimit: 100 })).body.data.executions;
      expect(page).toEqual(all.slice(100, 200));
    } finally {
      await server.stop();
    }
  });
});
