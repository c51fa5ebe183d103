// Routes of trade lists and backtests beyond the answered replay (routes/strategies.ts keeps `POST .../backtest`): a
// backtest's trades as CSV, a runtime's trades (JSON and CSV), optimisation, and background jobs. Thin: parse
// (zod) → a service → shape.
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { envelope } from '../../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../../platform/http/schemas.js';
import type { ZodApp } from '../../module.js';
import type { Backtester } from '../backtests/backtest.js';
import type { RuntimeService } from '../runtimes/runtimes.js';
import type { BacktestJobs } from '../backtests/backtest-jobs.js';
import type { Optimiser } from '../backtests/optimiser.js';
import { backtestBody, backtestJobBody, backtestJobIdParams, backtestJobSchema, optimisationBody, optimisationResult, tradeSchema } from '../schemas/backtests.js';
import { listQuery } from '../schemas/common.js';
import { runtimeIdParams } from '../schemas/runtimes.js';
import { strategyIdParams } from '../schemas/strategies.js';
import { tradeList, tradesCsv, type Trade } from '../backtests/trade-list.js';
import type { TradeStore } from '../backtests/trade-store.js';
import { BASE, COMMON, userOf } from './common.js';

const CSV_DESCRIPTION = 'text/csv with a header line: symbol, side, status, entry_at, entry_price, exit_at, exit_price, size, fills, fees_usd, pnl_usd, net_pnl_usd, return_percent, exit_reason, mark_price';

/** A CSV answer in the OpenAPI contract: text/csv for 200 only (errors stay the envelope's JSON). */
const CSV_RESPONSE = { description: 'One line per trade after the header', content: { 'text/csv': { schema: z.string() } } };

export function registerBacktestRoutes(app: ZodApp, ctx: AppContext, parts: { backtester: Backtester; runtimes: RuntimeService; trades: TradeStore; optimiser: Optimiser; jobs: BacktestJobs }): void {
  const { backtester, runtimes, trades, optimiser, jobs } = parts;
  const onRequest = ctx.auth.guard(['identity']);

  app.post(
    `${BASE}/strategies/:strategyId/backtest/trades.csv`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "A backtest's trade list as CSV: every round trip, its entry, exit, size, fees and P&L after fees (extension)",
        description: `The same body and the same replay as POST .../backtest (deterministic: the same trades as its tradeList), answered as ${CSV_DESCRIPTION}. Errors as the backtest route.`,
        params: strategyIdParams,
        body: backtestBody,
        response: { 200: CSV_RESPONSE, ...errors(400, 401, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      const gone = new AbortController();
      reply.raw.once('close', () => reply.raw.writableFinished || gone.abort());
      return csv(reply, `backtest-${request.params.strategyId}-trades.csv`, await backtester.trades(userOf(request), request.params.strategyId, request.body, gone.signal));
    },
  );

  app.post(
    `${BASE}/strategies/:strategyId/optimise`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "Optimise a rules strategy's numeric parameters: grid or random search, ranked by Sharpe, return or profit factor, with walk-forward (extension)",
        description:
          'Each trial is a backtest of the version with the parameters set (dot paths into its rules), from a fresh book over the same window, cron and limits. ' +
          'Without walkForward the trials over the whole window are ranked; with it, each fold ranks them in sample and replays the best out of sample, side by side. ' +
          'Your strategies and free public ones only (a priced one of another user is 400 invalid_backtest). Past 1,000,000 replayed ticks in all, 400 invalid_backtest_window: run it as a background job.',
        params: strategyIdParams,
        body: optimisationBody,
        response: { 200: envelopeSchema(optimisationResult), ...errors(400, 401, 404, 422) },
      },
    },
    async (request, reply) => {
      const gone = new AbortController();
      reply.raw.once('close', () => reply.raw.writableFinished || gone.abort());
      return envelope(await optimiser.run(userOf(request), request.params.strategyId, request.body, { signal: gone.signal }));
    },
  );

  app.post(
    `${BASE}/backtests`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Run a backtest or an optimisation in the background, with progress, cancel and resume (extension)',
        description:
          `kind backtest: the backtest's body (no paging) with strategyId, up to 250,000 ticks (several years of hourly candles); kind optimisation: the optimisation's body with strategyId, up to 100,000,000 replayed ticks. ` +
          'Checked as the answered routes check them (the same 400, 404, 409, 422 and 503), then queued: 201 with the job. A worker runs it; GET the job for its progress and, once succeeded, its result.',
        body: backtestJobBody,
        response: { 201: envelopeSchema(backtestJobSchema), ...errors(400, 401, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await jobs.create(userOf(request), request.body))),
  );
  app.get(
    `${BASE}/backtests`,
    { onRequest, schema: { ...COMMON, summary: 'Your background backtests and optimisations, newest first, without their results', querystring: listQuery, response: { 200: envelopeSchema(z.array(backtestJobSchema)), ...errors(400, 401) } } },
    async (request) => envelope(await jobs.list(userOf(request), request.query.limit, request.query.before ?? null)),
  );
  app.get(
    `${BASE}/backtests/:jobId`,
    { onRequest, schema: { ...COMMON, summary: 'A background job: its status, progress and, once succeeded, its result', params: backtestJobIdParams, response: { 200: envelopeSchema(backtestJobSchema), ...errors(400, 401, 404) } } },
    async (request) => envelope(await jobs.get(userOf(request), request.params.jobId)),
  );
  app.post(
    `${BASE}/backtests/:jobId/cancel`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Cancel a background job: a queued one at once, a running one at its next save (it keeps its checkpoint)',
        description: '409 invalid_job_transition for a job already finished (succeeded, failed, cancelled).',
        params: backtestJobIdParams,
        response: { 200: envelopeSchema(backtestJobSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => envelope(await jobs.cancel(userOf(request), request.params.jobId)),
  );
  app.post(
    `${BASE}/backtests/:jobId/resume`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Queue a cancelled or failed job again: it resumes from its checkpoint',
        description: '409 invalid_job_transition for a job queued, running or succeeded.',
        params: backtestJobIdParams,
        response: { 200: envelopeSchema(backtestJobSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => envelope(await jobs.resume(userOf(request), request.params.jobId)),
  );
  app.get(
    `${BASE}/backtests/:jobId/trades.csv`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "A succeeded background backtest's trades as CSV",
        description: `Its result's tradeList, as ${CSV_DESCRIPTION}. 409 invalid_job_transition for an optimisation or a job not succeeded.`,
        params: backtestJobIdParams,
        response: { 200: CSV_RESPONSE, ...errors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => csv(reply, `backtest-job-${request.params.jobId}-trades.csv`, await jobs.trades(userOf(request), request.params.jobId)),
  );

  /** A runtime's trades: its filled orders as round trips, an open one marked where the runtime's book is marked now. */
  const runtimeTrades = async (userId: string, runtimeId: string): Promise<Trade[]> => {
    const runtime = await runtimes.get(userId, runtimeId);
    const marks = Object.fromEntries(runtime.book.positions.map((p) => [p.symbol, p.price]));
    return tradeList(await trades.fills(runtime.id), marks);
  };
  app.get(
    `${BASE}/runtimes/:runtimeId/trades`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "A runtime's trades: every round trip of its book, oldest first, with fees and P&L after fees; an open one marked at the feed's price now (extension)",
        params: runtimeIdParams,
        response: { 200: envelopeSchema(z.array(tradeSchema)), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await runtimeTrades(userOf(request), request.params.runtimeId)),
  );
  app.get(
    `${BASE}/runtimes/:runtimeId/trades.csv`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: "A runtime's trades as CSV (extension)",
        description: `The same trades as GET .../trades, as ${CSV_DESCRIPTION}.`,
        params: runtimeIdParams,
        response: { 200: CSV_RESPONSE, ...errors(400, 401, 404) },
      },
    },
    async (request, reply) => csv(reply, `runtime-${request.params.runtimeId}-trades.csv`, await runtimeTrades(userOf(request), request.params.runtimeId)),
  );
}

function csv(reply: FastifyReply, filename: string, trades: Trade[]) {
  return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${filename}"`).send(tradesCsv(trades));
}
