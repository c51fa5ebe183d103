// Trading at scale: 1,000 active runtimes on `* * * * *`. Each tick is fired by the events scheduler (on a
// hand-moved clock in this process, so ticks come one after another instead of once a minute) and drained
// by worker processes running the service's tick consumer over the same PostgreSQL. Per tick we measure the
// fire time and the drain time (from "go" to the last worker finding no work), and check exactly once:
// 1,000 executions for the tick, one per runtime. Ticks alternate between one worker and two, so each
// round compares them side by side. Targets: every tick done in < 60 s with one worker; two workers ≥ 1.6×
// one worker's executions/s.
// BENCH_KIND=llm_agent runs llm_agent runtimes instead, their model a stand-in answering over OpenAI's wire
// protocol after BENCH_MODEL_DELAY_MS (200): each runtime's own fund limit makes each prompt differ, so every
// runtime's tick asks the model (no decision is shared).
// Run: npx tsx bench/trading/run.ts   (BENCH_ROUNDS 5, BENCH_RUNTIMES 1000, BENCH_PG_URL, BENCH_KIND, BENCH_MODEL_DELAY_MS)
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { ManualClock } from '../../src/platform/clock.js';
import { databaseUrl, machine, pgAdmin } from '../lib.js';
import { startBenchServer } from '../bench-server.js';
import { startModelStandIn } from '../../test/trading/model-stand-in.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const serverUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const runtimeCount = Number(process.env.BENCH_RUNTIMES ?? 1000);
const kind = process.env.BENCH_KIND === 'llm_agent' ? 'llm_agent' : 'quant_signal';
const modelDelayMs = Number(process.env.BENCH_MODEL_DELAY_MS ?? 200);

// llm_agent: the stand-in model (buys $100 when flat, else holds), one master key for every process so the
// account's sealed provider key opens in the workers too.
const MODEL_KEY = 'sk-bench-model-key';
const model = kind === 'llm_agent' ? await startModelStandIn({ openai: MODEL_KEY, anthropic: MODEL_KEY, openrouter: MODEL_KEY }) : null;
if (model) {
  model.delayMs = modelDelayMs;
  model.reply = (asked) =>
    asked.prompt.book.positions.length === 0
      ? { input: { orders: [{ symbol: 'BTC-USD', side: 'buy', notionalUsd: 100, type: 'market' }], rationale: 'flat: enter' } }
      : { input: { orders: [], rationale: 'hold' } };
  Object.assign(process.env, model.env(), { WALLET_MASTER_KEY: randomBytes(32).toString('hex') });
}

const database = `tollgate_bench_trading_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
await admin(`create database ${database}`);
const dbUrl = databaseUrl(serverUrl, database);

// Ticks in the past (workers lease by the database's clock), a minute apart, one per measurement.
const clock = new ManualClock(new Date(Math.floor(Date.now() / 60_000) * 60_000 - 6 * 3600_000));
const main = await startBenchServer('trading', { roles: [], clock, env: { DATABASE_URL: dbUrl } });
const { ctx } = main;
const trading = ctx.services.trading;
const workers: ChildProcess[] = [];

const count = async (query: ReturnType<typeof sql>) => Number((await ctx.database.query<{ n: string }>(query))[0]!.n);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const spread = (values: number[], digits = 2) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

function startWorker(): Promise<ChildProcess> {
  const child = fork(path.join(here, 'worker.ts'), [], {
    execArgv: ['--import', 'tsx', ...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [])],
    env: { ...process.env, BENCH_DATABASE_URL: dbUrl, CHAIN_RPC_URL: ctx.chain.rpcUrl },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

/** Sends go (with the tick's time, the workers' clock) to `n` workers; resolves with the drain time and what each handled. */
async function drainWith(n: number, at: Date): Promise<{ ms: number; handled: number[]; cpuMs: number[] }> {
  const started = Date.now();
  const reports = await Promise.all(
    workers.slice(0, n).map(
      (worker) =>
        new Promise<{ handled: number; endedAt: number; cpuMs: number }>((resolve) => {
          worker.once('message', (message: { handled: number; endedAt: number; cpuMs: number }) => resolve(message));
          worker.send({ type: 'go', at: at.toISOString() });
        }),
    ),
  );
  return { ms: Math.max(...reports.map((r) => r.endedAt)) - started, handled: reports.map((r) => r.handled), cpuMs: reports.map((r) => Math.round(r.cpuMs)) };
}

try {
  const setupStarted = Date.now();
  const definition = { instructions: 'fast=5 slow=20', universe: ['BTC-USD', 'ETH-USD'], dataSources: ['embedded'], candleInterval: '1m' };
  const strategy = await trading.catalog.createStrategy('bench', {
    name: 'bench trend',
    visibility: 'private',
    version:
      kind === 'llm_agent'
        ? { kind, schemaVersion: 1, definition: { ...definition, instructions: 'Buy 100 USD of BTC when flat; hold otherwise.', model: { provider: 'openai', model: 'bench-model' }, lookback: 20 } }
        : { kind, schemaVersion: 1, definition },
  });
  const account = await trading.catalog.createAccount('bench', 'bench');
  if (kind === 'llm_agent') await trading.agents.setKey(account.id, 'openai', MODEL_KEY);
  for (let i = 0; i < runtimeCount; i++) {
    await trading.runtimes.create('bench', {
      strategyVersionId: strategy.latestVersion.id,
      accountId: account.id,
      name: `runtime ${i}`,
      cronExpression: '* * * * *',
      fundLimitUsd: 10_000 + i,
      maxLeverage: 2,
      maxDrawdownPercent: 50,
      idempotencyKey: `bench-${i}`,
    });
  }
  while ((await ctx.services.events.scheduler.tick()).more);
  while (await trading.reconciler.pass());
  const active = await count(sql`select count(*)::text as n from trading_runtimes where status = 'active'`);
  if (active !== runtimeCount) throw new Error(`${active} of ${runtimeCount} runtimes active`);
  console.log(`setup: ${runtimeCount} active runtimes in ${((Date.now() - setupStarted) / 1000).toFixed(1)} s`);

  workers.push(await startWorker(), await startWorker());
  const results: Record<1 | 2, { fireMs: number[]; drainMs: number[]; perSecond: number[] }> = { 1: { fireMs: [], drainMs: [], perSecond: [] }, 2: { fireMs: [], drainMs: [], perSecond: [] } };
  const ratios: number[] = [];
  let ticks = 0;
  for (let round = 0; round < rounds; round++) {
    const perSecond: Record<number, number> = {};
    for (const n of round % 2 === 0 ? [1, 2] : [2, 1]) {
      clock.advance(60_000);
      const tick = clock.now();
      const fireStarted = Date.now();
      while ((await ctx.services.events.scheduler.tick()).more);
      const fireMs = Date.now() - fireStarted;
      const { ms, handled, cpuMs } = await drainWith(n, tick);
      ticks += 1;
      // Exactly once: one tick (its first leg; a tick has one execution per order) per runtime, and no tick event left behind.
      const executions = await count(sql`select count(*)::text as n from trading_executions where scheduled_at = ${tick} and trigger_type = 'schedule' and leg = 0`);
      const distinct = await count(sql`select count(distinct runtime_id)::text as n from trading_executions where scheduled_at = ${tick}`);
      if (executions !== runtimeCount || distinct !== runtimeCount) throw new Error(`tick ${tick.toISOString()}: ${executions} executions over ${distinct} runtimes`);
      perSecond[n] = runtimeCount / (ms / 1000);
      results[n as 1 | 2].fireMs.push(fireMs);
      results[n as 1 | 2].drainMs.push(ms);
      results[n as 1 | 2].perSecond.push(perSecond[n]);
      console.log(`round ${round + 1}, ${n} worker(s): fire ${fireMs} ms, drain ${ms} ms (${perSecond[n].toFixed(0)} executions/s, handled ${handled.join(' + ')}, worker CPU ${cpuMs.join(' + ')} ms), tick total ${((fireMs + ms) / 1000).toFixed(1)} s`);
    }
    ratios.push(perSecond[2]! / perSecond[1]!);
  }
  const total = await count(sql`select count(*)::text as n from trading_executions where leg = 0`);
  const failed = await count(sql`select count(*)::text as n from trading_executions where status in ('failed', 'skipped')`);
  if (total !== runtimeCount * ticks) throw new Error(`${total} executions for ${ticks} ticks`);

  const one = results[1];
  const worstTickS = Math.max(...one.fireMs.map((f, i) => f + one.drainMs[i]!)) / 1000;
  console.log(`\nmachine: ${machine()}, PostgreSQL ${(await admin('show server_version')).rows[0].server_version}`);
  if (model) {
    const calls = model.asked.length;
    const agentTicks = await count(sql`select count(*)::text as n from trading_executions where decision->>'kind' = 'llm_agent' and decision->>'outcome' = 'ok'`);
    console.log(`llm_agent: model answering in ${modelDelayMs} ms; ${calls} model calls for ${total} executions, ${agentTicks} decided by the model (ok), ${total - agentTicks} otherwise`);
  }
  console.log(`${runtimeCount} runtimes, ${rounds} rounds, ${ticks} ticks, ${total} executions (${failed} failed or skipped), each tick exactly once`);
  console.log(`1 worker: fire median ${median(one.fireMs)} ms, drain median ${median(one.drainMs)} ms (${spread(one.drainMs, 0)}), ${median(one.perSecond).toFixed(0)} executions/s (${spread(one.perSecond, 0)}); worst tick ${worstTickS.toFixed(1)} s of 60 s ${worstTickS < 60 ? 'PASS' : 'MISS'}`);
  console.log(`2 workers: drain median ${median(results[2].drainMs)} ms (${spread(results[2].drainMs, 0)}), ${median(results[2].perSecond).toFixed(0)} executions/s (${spread(results[2].perSecond, 0)})`);
  console.log(`two workers / one, per round: median ${median(ratios).toFixed(2)}× (${spread(ratios)}) ${median(ratios) >= 1.6 ? 'PASS' : 'MISS'} (target ≥ 1.6×)`);
} finally {
  for (const worker of workers) {
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.send({ type: 'stop' });
    const timer = setTimeout(() => worker.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await main.stop();
  await model?.close();
  await admin(`drop database ${database} with (force)`);
}
