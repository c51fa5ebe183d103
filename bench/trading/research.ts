// Research at length (issue 42): a 3-year hourly backtest and a 100-trial optimisation, each run as a background
// job (POST /agentic-trading/backtests, then the worker's step, timed) over PostgreSQL. Side by side in every
// round, the order rotating: the 3-year backtest on imported candles (the database read each tick), the same on
// the embedded feed (computed prices: what the replay itself costs), and a 100-trial grid over the last year of
// imported candles (its trials read the candles once, MemoFeed). The candles are 3 years of hourly BTC-USD-like
// prices, a seeded random walk (no real 3-year file ships with the repository), imported as the CLI would.
// Run: npx tsx bench/trading/research.ts   (BENCH_ROUNDS 3, BENCH_PG_URL)
import { randomBytes } from 'node:crypto';
import { CandleStore } from '../../src/modules/trading/data/candle-store.js';
import { databaseUrl, machine, median, pgAdmin } from '../lib.js';
import { startBenchServer } from '../bench-server.js';
import { seededRandom } from '../../src/platform/seeded-random.js';

const serverUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const HOUR = 3_600_000;
const YEARS = 3;

const database = `tollgate_bench_research_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
await admin(`create database ${database}`);
const server = await startBenchServer('trading-research', { roles: ['api'], env: { DATABASE_URL: databaseUrl(serverUrl, database) } });
const { ctx } = server;
const jobs = ctx.services.trading.backtestJobs;

try {
  // 3 years of hourly candles to the last whole hour, and 200 more before for the warm-up.
  const to = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
  const ticks = Math.round((YEARS * 365 * 24 * HOUR) / HOUR);
  const from = to - (ticks - 1) * HOUR;
  const candles = randomWalk(from - 200 * HOUR, to, 30_000, 7);
  const imported = Date.now();
  await new CandleStore(ctx.db).upsert('BTC-USD', '1h', candles, new Date());
  console.log(`machine: ${machine()}; PostgreSQL ${(await admin('show server_version')).rows[0].server_version}; ${rounds} rounds`);
  console.log(`imported ${candles.length} hourly candles (${new Date(candles[0]!.start).toISOString()} to ${new Date(candles.at(-1)!.start).toISOString()}) in ${Date.now() - imported} ms`);

  const token = await ctx.devIdentity!.sign('bench-research');
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    const answer = (await response.json()) as { data: any; message: string };
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${answer.message}`);
    return answer.data;
  };
  const strategy = async (name: string, dataSource: string, rules?: object) =>
    (
      await call('POST', '/agentic-trading/strategies', {
        name,
        version: { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'Trend. fast=24 slow=96 exposure=0.5', universe: ['BTC-USD'], dataSources: [dataSource], candleInterval: '1h', ...(rules ? { rules } : {}) } },
      })
    ).id as string;
  const trendImported = await strategy('trend on imported', 'imported');
  const trendEmbedded = await strategy('trend on embedded', 'embedded');
  const emaCross = await strategy('ema cross', 'imported', {
    indicators: { fast: { type: 'ema', period: 12 }, slow: { type: 'ema', period: 48 } },
    entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [] },
    exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
    sizing: { exposure: 0.5 },
  });
  const window = { from: new Date(from).toISOString(), to: new Date(to).toISOString(), cronExpression: '0 * * * *', fundLimitUsd: 100_000, maxLeverage: 1, maxDrawdownPercent: 100 };
  const lastYear = { ...window, from: new Date(to - (365 * 24 - 1) * HOUR).toISOString() };
  const runs = {
    'backtest, 3 years hourly, imported': { kind: 'backtest', strategyId: trendImported, ...window },
    'backtest, 3 years hourly, embedded': { kind: 'backtest', strategyId: trendEmbedded, ...window },
    'optimisation, 100 trials × 1 year hourly, imported': {
      kind: 'optimisation',
      strategyId: emaCross,
      ...lastYear,
      method: 'grid',
      trials: 100,
      objective: 'sharpe',
      parameters: [
        { path: 'indicators.fast.period', min: 5, max: 50, step: 5 },
        { path: 'indicators.slow.period', min: 60, max: 195, step: 15 },
      ],
    },
  } as const;
  const names = Object.keys(runs) as Array<keyof typeof runs>;
  const times = new Map(names.map((n) => [n, [] as number[]]));
  for (let round = 0; round < rounds; round++) {
    for (const name of names.map((_, i) => names[(i + round) % names.length]!)) {
      const job = await call('POST', '/agentic-trading/backtests', runs[name]);
      const started = performance.now();
      if (!(await jobs.runNext())) throw new Error('no job to run');
      const ms = performance.now() - started;
      const done = await call('GET', `/agentic-trading/backtests/${job.id}`);
      if (done.status !== 'succeeded') throw new Error(`${name}: ${done.status} ${done.error}`);
      times.get(name)!.push(ms);
      const ticksRun = done.kind === 'backtest' ? done.result.ticks : done.result.trialsRun * done.result.ticks;
      const what =
        done.kind === 'backtest'
          ? `${done.result.ticks} ticks, ${done.result.tradeListTotal} trades, return ${done.result.report.returnPercent.toFixed(1)} %`
          : `${done.result.trialsRun} trials of ${done.result.ticks} ticks, best ${JSON.stringify(done.result.best.values)} sharpe ${done.result.best.objective.toFixed(2)}`;
      console.log(`round ${round + 1} ${name}: ${(ms / 1000).toFixed(2)} s (${Math.round(ticksRun / (ms / 1000))} ticks/s; ${what})`);
    }
  }
  for (const name of names) {
    const values = times.get(name)!.map((ms) => ms / 1000);
    console.log(`${name}: median ${median(values).toFixed(2)} s (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`);
  }
} finally {
  await server.stop();
  await admin(`drop database if exists ${database} with (force)`);
}
process.exit(0);

/** Hourly candles of a seeded random walk (about 55 % a year of volatility), prices to the cent. */
function randomWalk(from: number, to: number, start: number, seed: number) {
  const uniform = seededRandom(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
  const rows = [];
  let close = start;
  for (let t = from; t <= to; t += HOUR) {
    const open = close;
    close = open * Math.exp(0.006 * normal());
    const high = Math.max(open, close) * (1 + 0.002 * uniform());
    const low = Math.min(open, close) * (1 - 0.002 * uniform());
    rows.push({ start: t, open: open.toFixed(2), high: high.toFixed(2), low: low.toFixed(2), close: close.toFixed(2), volume: (10 + 90 * uniform()).toFixed(4) });
  }
  return rows;
}
