// Background backtests and optimisations (issue 42, item 8): past the answered route's 10,000 ticks, a job runs
// in the worker with its progress saved; cancelled mid-run it keeps its checkpoint and, resumed, ends with the
// very result an uninterrupted job gives; a worker that died leaves its job to another once the lease lapses
// (the database's clock). A job's result is what the answered route answers for the same body.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTradingHarness, strategyBody, type TradingHarness } from './harness.js';

let h: TradingHarness;
beforeAll(async () => {
  h = await openTradingHarness();
});
afterAll(async () => h?.close());

const HOUR = 3_600_000;
const jobs = () => h.app.ctx.services.trading.backtestJobs;

/** Runs the worker's step while polling the job until `until` holds, then does `then`; answers the job after the step. */
async function runWhile(token: string, jobId: string, until: (job: any) => boolean, then: () => Promise<void>) {
  const running = jobs().runNext();
  let acted = false;
  for (let i = 0; i < 10_000 && !acted; i++) {
    const job = (await h.call('GET', `/agentic-trading/backtests/${jobId}`, token)).body.data;
    if (until(job)) {
      await then();
      acted = true;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(acted).toBe(true);
  expect(await running).toBe(true);
  return (await h.call('GET', `/agentic-trading/backtests/${jobId}`, token)).body.data;
}

describe('background backtests', () => {
  it('runs past 10,000 ticks with progress, cancels and resumes to the uninterrupted result, and answers as the answered route does', { timeout: 300_000 }, async () => {
    const token = await h.app.identityToken('patient');
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Hourly trend. fast=10 slow=50 exposure=0.5', { candleInterval: '1h' }))).body.data;
    const to = new Date(Math.floor(h.clock.now().getTime() / HOUR) * HOUR - 24 * HOUR);
    // 12,000 hourly ticks: 500 days.
    const body = { from: new Date(to.getTime() - 11_999 * HOUR).toISOString(), to: to.toISOString(), cronExpression: '0 * * * *', fundLimitUsd: 10_000, maxLeverage: 1, maxDrawdownPercent: 100 };
    const answered = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, body);
    expect(answered).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' } } });
    expect(answered.body.message).toContain('the window holds more than 10000 ticks: run it as a background job (POST /agentic-trading/backtests)');

    const create = async () => {
      const created = await h.call('POST', '/agentic-trading/backtests', token, { kind: 'backtest', strategyId: strategy.id, ...body });
      expect(created.status).toBe(201);
      return created.body.data;
    };
    const first = await create();
    expect(first).toMatchObject({ kind: 'backtest', status: 'queued', cancelRequested: false, progress: { done: 0, total: 12_000, unit: 'ticks', percent: 0 }, result: null, attempts: 0 });
    expect(await jobs().runNext()).toBe(true);
    const whole = (await h.call('GET', `/agentic-trading/backtests/${first.id}`, token)).body.data;
    expect(whole).toMatchObject({ status: 'succeeded', progress: { done: 12_000, total: 12_000, percent: 100 }, attempts: 1, error: null });
    expect(whole.result).toMatchObject({ ticks: 12_000, stoppedAt: null, executionsTotal: 12_000 });
    expect(whole.result.executions).toBeUndefined();
    expect(whole.result.tradeList).toHaveLength(whole.result.tradeListTotal);
    expect(whole.result.tradeListTotal).toBeGreaterThan(50);
    expect(whole.result.equityCurve).toHaveLength(1_000);
    // The trades add up to the equity's change, after fees.
    const net = whole.result.tradeList.reduce((a: number, t: any) => a + t.netPnlUsd, 0);
    expect(net).toBeCloseTo(whole.result.report.endEquityUsd - whole.result.report.startEquityUsd, 6);

    // The same job, cancelled once its progress shows, keeps where it stood; resumed, it ends where the first did.
    const second = await create();
    const cancelled = await runWhile(token, second.id, (job) => job.status === 'running' && job.progress.done >= 500, async () => {
      const asked = await h.call('POST', `/agentic-trading/backtests/${second.id}/cancel`, token);
      expect(asked).toMatchObject({ status: 200, body: { data: { status: 'running', cancelRequested: true } } });
    });
    expect(cancelled).toMatchObject({ status: 'cancelled', cancelRequested: false, result: null });
    expect(cancelled.progress.done).toBeGreaterThanOrEqual(1_000);
    expect(cancelled.progress.done).toBeLessThan(12_000);
    expect(cancelled.progress.done % 500).toBe(0);
    const resumed = await h.call('POST', `/agentic-trading/backtests/${second.id}/resume`, token);
    expect(resumed.body.data).toMatchObject({ status: 'queued', progress: { done: cancelled.progress.done } });
    expect(await jobs().runNext()).toBe(true);
    const done = (await h.call('GET', `/agentic-trading/backtests/${second.id}`, token)).body.data;
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(done.result).toEqual(whole.result);

    // Its trades as CSV: every one.
    const csv = await h.app.origins.api!.inject({ method: 'GET', url: `/agentic-trading/backtests/${first.id}/trades.csv`, headers: { authorization: `Bearer ${token}` } });
    expect(csv.statusCode).toBe(200);
    expect(csv.body.trim().split('\r\n')).toHaveLength(whole.result.tradeList.length + 1);

    // Within the answered route's limit, a job answers what the route answers (but for the executions' page).
    const shorter = { ...body, from: new Date(to.getTime() - 4_999 * HOUR).toISOString() };
    const direct = (await h.call('POST', `/agentic-trading/strategies/${strategy.id}/backtest`, token, { ...shorter, tradeListLimit: 10_000 })).body.data;
    const job = (await h.call('POST', '/agentic-trading/backtests', token, { kind: 'backtest', strategyId: strategy.id, ...shorter })).body.data;
    await jobs().runNext();
    const { executions: _executions, ...expected } = direct;
    expect((await h.call('GET', `/agentic-trading/backtests/${job.id}`, token)).body.data.result).toEqual(expected);

    // A worker that died holding a job: nobody takes it before its lease lapses, by the database's clock; then one does.
    const orphan = await create();
    const lapses = new Date(h.clock.now().getTime() + 2 * 60_000).toISOString();
    await h.app.ctx.database.query(sql`update trading_backtest_jobs set status = 'running', lease_owner = 'dead-worker', lease_expires_at = ${lapses}, attempts = 1 where id = ${orphan.id}`);
    expect(await jobs().runNext()).toBe(false);
    h.clock.set(new Date(h.clock.now().getTime() + 3 * 60_000));
    expect(await jobs().runNext()).toBe(true);
    const adopted = (await h.call('GET', `/agentic-trading/backtests/${orphan.id}`, token)).body.data;
    expect(adopted).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect(adopted.result).toEqual(whole.result);

    // What a job cannot do, and who cannot see it.
    const queued = await create();
    expect((await h.call('POST', `/agentic-trading/backtests/${queued.id}/cancel`, token)).body.data).toMatchObject({ status: 'cancelled', cancelRequested: false });
    expect(await jobs().runNext()).toBe(false);
    expect(await h.call('POST', `/agentic-trading/backtests/${first.id}/cancel`, token)).toMatchObject({ status: 409, body: { data: { reason: 'invalid_job_transition', status: 'succeeded' } } });
    expect(await h.call('POST', `/agentic-trading/backtests/${first.id}/resume`, token)).toMatchObject({ status: 409, body: { data: { reason: 'invalid_job_transition' } } });
    const listed = (await h.call('GET', '/agentic-trading/backtests?limit=100', token)).body.data;
    // Newest first by id (the ids of one millisecond of the test's clock come in any order).
    expect(listed.map((j: any) => j.id)).toEqual([...listed.map((j: any) => j.id)].sort().reverse());
    expect(new Set(listed.map((j: any) => j.id))).toEqual(new Set([queued.id, orphan.id, job.id, second.id, first.id]));
    expect(listed.every((j: any) => j.result === null)).toBe(true);
    const mallory = await h.app.identityToken('mallory');
    for (const [method, path] of [['GET', ''], ['POST', '/cancel'], ['POST', '/resume'], ['GET', '/trades.csv']] as const) {
      expect(await h.call(method, `/agentic-trading/backtests/${first.id}${path}`, mallory)).toMatchObject({ status: 404, body: { data: { reason: 'backtest_job_not_found' } } });
    }
    expect((await h.call('GET', '/agentic-trading/backtests', mallory)).body.data).toEqual([]);
    expect((await h.call('POST', '/agentic-trading/backtests', mallory, { kind: 'backtest', strategyId: strategy.id, ...body })).status).toBe(404);
    expect((await h.call('GET', `/agentic-trading/backtests/${first.id}`, null)).status).toBe(401);
    // Checked when created: a window past the job's own limit is refused at once.
    const decade = await h.call('POST', '/agentic-trading/backtests', token, { kind: 'backtest', strategyId: strategy.id, ...body, from: new Date(to.getTime() - 300_000 * HOUR).toISOString() });
    expect(decade).toMatchObject({ status: 400, body: { data: { reason: 'invalid_backtest_window' }, message: expect.stringContaining('more than 250000 ticks') } });
  });

  it('runs an optimisation in the background, cancelled and resumed to the answered optimisation', { timeout: 300_000 }, async () => {
    const token = await h.app.identityToken('optimist');
    const rules = {
      indicators: { fast: { type: 'ema', period: 3 }, slow: { type: 'ema', period: 8 } },
      entry: { long: [{ left: 'fast', op: 'crosses_above', right: 'slow' }], short: [] },
      exit: { long: [{ left: 'fast', op: 'crosses_below', right: 'slow' }] },
    };
    const version = { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'EMA cross.', universe: ['ETH-USD'], dataSources: ['embedded'], candleInterval: '1m', rules } };
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, { name: 'ema', version })).body.data;
    const to = new Date(Math.floor(h.clock.now().getTime() / HOUR) * HOUR - HOUR);
    const body = {
      from: new Date(to.getTime() - 8 * HOUR).toISOString(),
      to: to.toISOString(),
      fundLimitUsd: 5_000,
      maxLeverage: 1,
      maxDrawdownPercent: 90,
      parameters: [
        { path: 'indicators.fast.period', min: 2, max: 5, step: 1 },
        { path: 'indicators.slow.period', min: 8, max: 12, step: 2 },
      ],
      walkForward: { folds: 2, inSamplePercent: 70 },
    };
    const direct = await h.call('POST', `/agentic-trading/strategies/${strategy.id}/optimise`, token, body);
    expect(direct.status).toBe(200);
    const job = (await h.call('POST', '/agentic-trading/backtests', token, { kind: 'optimisation', strategyId: strategy.id, ...body })).body.data;
    // 12 trials in each of 2 folds, and each fold's out-of-sample replay.
    expect(job).toMatchObject({ kind: 'optimisation', status: 'queued', progress: { done: 0, total: 26, unit: 'replays' } });
    const cancelled = await runWhile(token, job.id, (j) => j.progress.done >= 3, async () => {
      await h.call('POST', `/agentic-trading/backtests/${job.id}/cancel`, token);
    });
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.progress.done).toBeGreaterThanOrEqual(4);
    expect(cancelled.progress.done).toBeLessThan(26);
    await h.call('POST', `/agentic-trading/backtests/${job.id}/resume`, token);
    expect(await jobs().runNext()).toBe(true);
    const finished = (await h.call('GET', `/agentic-trading/backtests/${job.id}`, token)).body.data;
    expect(finished).toMatchObject({ status: 'succeeded', progress: { done: 26, total: 26 } });
    expect(finished.result).toEqual(direct.body.data);
    expect(await h.call('GET', `/agentic-trading/backtests/${job.id}/trades.csv`, token)).toMatchObject({ status: 409, body: { data: { reason: 'invalid_job_transition' } } });
  });
});
