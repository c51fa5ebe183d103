// Backtests and optimisations too long to answer (docs/trading.md#background-jobs): checked and queued at once,
// run by the worker role's `trading.backtests` loop, one job at a time per worker (beside the loop, which returns at
// once: a job runs for minutes and the loop must keep showing it is alive), with progress, cancel and resume. A job's row is its durable record (backtest-job-store.ts): claimed under a lease by the database's
// clock, its progress saved every few hundred ticks (which also renews the lease and reads a cancel), and its
// replay's state saved as a checkpoint every few seconds, so a cancelled job, or one whose worker died, resumes
// where it stood. The replay is the answered backtest's (replay.ts), so a job reports what POST .../backtest
// reports for the same body, only without the tick limit and without the executions.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Clock } from '../../../platform/clock.js';
import { newId } from '../../../platform/ids.js';
import type { Backtester, ReplayInput, WorkLimits } from './backtest.js';
import type { BacktestJobRow, BacktestJobStore } from './backtest-job-store.js';
import { tradingErrors } from '../errors.js';
import { OptimisationStopped, type Trial } from './optimise.js';
import type { Optimiser } from './optimiser.js';
import { finished, replayOutcome, replayTicks, startState, type ReplayState } from './replay.js';
import type { backtestJobBody, backtestJobSchema, optimisationBody } from '../schemas/backtests.js';
import { tradesCsv, type Trade } from './trade-list.js';

/** How much a job may do: 25× an answered backtest's ticks (several years of hourly candles), and more trials. */
export const JOB_WORK: WorkLimits & { tickRuns: number } = { ticks: 250_000, candleReads: 100_000_000, prices: 500_000_000, tickRuns: 100_000_000 };

export interface JobTiming {
  /** How long a worker holds a job without saving before another may take it over. */
  leaseMs: number;
  /** Ticks between progress saves (each renews the lease and reads a cancel). */
  saveEveryTicks: number;
  /** Time between checkpoints of a backtest's replay state (a save that writes the whole state). */
  checkpointMs: number;
}
export const JOB_TIMING: JobTiming = { leaseMs: 120_000, saveEveryTicks: 500, checkpointMs: 10_000 };

type JobView = z.infer<typeof backtestJobSchema>;
type OptimisationInput = z.infer<typeof optimisationBody>;

export class BacktestJobs {
  /** This worker, as a job's lease names it. */
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  /** The job this worker runs now, if any. */
  private running: Promise<void> | null = null;

  constructor(
    private readonly store: BacktestJobStore,
    private readonly backtester: Backtester,
    private readonly optimiser: Optimiser,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly timing: JobTiming = JOB_TIMING,
  ) {}

  /**
   * Checks the job as its run will (the window, the strategy's access, paid if priced, the work and the candles),
   * so a job that cannot run is refused now, then queues it.
   */
  async create(userId: string, body: z.infer<typeof backtestJobBody>): Promise<JobView> {
    const { kind, strategyId, ...input } = body;
    let total: number;
    if (kind === 'backtest') {
      const prepared = await this.backtester.prepare(userId, strategyId, input, JOB_WORK);
      if (prepared.setup.version.kind === 'llm_agent') throw tradingErrors.invalidBacktest("an llm_agent's backtest is answered (POST .../backtest, with maxModelCalls): it does not run in the background");
      total = prepared.setup.ticks.length;
    } else {
      total = (await this.optimiser.plan(userId, strategyId, input as OptimisationInput, JOB_WORK)).replays;
    }
    const row = await this.store.insert({ id: newId(this.clock.now().getTime()), userId, strategyId, kind, input: body, progressTotal: total });
    return jobView(row);
  }

  async get(userId: string, jobId: string): Promise<JobView> {
    return jobView(await this.owned(userId, jobId));
  }

  async list(userId: string, limit: number, before: string | null): Promise<JobView[]> {
    return (await this.store.ofUser(userId, limit, before)).map((row) => jobView({ ...row, result: null, checkpoint: null }));
  }

  /** A queued job ends cancelled; a running one stops at its worker's next save (cancelRequested until then). */
  async cancel(userId: string, jobId: string): Promise<JobView> {
    const row = await this.store.cancel(jobId, userId);
    if (row) return jobView(row);
    throw tradingErrors.backtestJobState((await this.owned(userId, jobId)).status, 'cancelled');
  }

  /** A cancelled or failed job is queued again; its run starts from its checkpoint. */
  async resume(userId: string, jobId: string): Promise<JobView> {
    const row = await this.store.resume(jobId, userId);
    if (row) return jobView(row);
    throw tradingErrors.backtestJobState((await this.owned(userId, jobId)).status, 'resumed');
  }

  /** A finished backtest job's trades, every one. */
  async trades(userId: string, jobId: string): Promise<Trade[]> {
    const row = await this.owned(userId, jobId);
    if (row.kind !== 'backtest' || row.status !== 'succeeded') throw tradingErrors.backtestJobState(`${row.status} ${row.kind}`, 'read as a trade list (a succeeded backtest job only)');
    return (row.result as { tradeList: Trade[] }).tradeList;
  }

  async tradesCsv(userId: string, jobId: string): Promise<string> {
    return tradesCsv(await this.trades(userId, jobId));
  }

  /**
   * The loop's step: when this worker runs no job, claims the oldest runnable one and starts it beside the loop.
   * Its worker's stop (`signal`) gives it back queued at the state it reached (the next worker resumes there); a
   * worker that dies keeps it until its lease lapses, and the next resumes from its last checkpoint.
   */
  async startNext(signal: AbortSignal): Promise<boolean> {
    if (this.running) return false;
    const job = await this.store.claim(this.owner, this.timing.leaseMs);
    if (!job) return false;
    this.running = this.run(job, signal)
      .catch((error: unknown) => this.log.error({ err: error, jobId: job.id }, 'backtest job failed to record its end'))
      .finally(() => (this.running = null));
    return false;
  }

  /** Claims the oldest runnable job and runs it to its end (tests and benches drive jobs with it). True when it ran one. */
  async runNext(signal?: AbortSignal): Promise<boolean> {
    const job = await this.store.claim(this.owner, this.timing.leaseMs);
    if (!job) return false;
    await this.run(job, signal);
    return true;
  }

  private async run(job: BacktestJobRow, signal?: AbortSignal): Promise<void> {
    if (job.cancelRequested) {
      await this.store.finish(job.id, this.owner, { status: 'cancelled' });
      return;
    }
    try {
      if (job.kind === 'backtest') await this.runBacktest(job, signal);
      else await this.runOptimisation(job, signal);
    } catch (error) {
      if (error instanceof Stopping) {
        await this.store.release(job.id, this.owner, error.progressDone, error.checkpoint);
        return;
      }
      // The refusals a run can meet (candles deleted since, the strategy's access) are the API's own words.
      await this.store.finish(job.id, this.owner, { status: 'failed', error: String((error as Error).message).split('\n')[0]! });
    }
  }

  private async runBacktest(job: BacktestJobRow, signal?: AbortSignal): Promise<void> {
    const { kind: _kind, strategyId, ...input } = job.input as z.infer<typeof backtestJobBody> & ReplayInput;
    const prepared = await this.backtester.prepare(job.userId, strategyId, input, JOB_WORK);
    const state: ReplayState = (job.checkpoint as ReplayState | null) ?? startState(input.fundLimitUsd);
    let checkpointed = Date.now();
    try {
      await replayTicks(prepared.setup, state, {
        signal,
        checkpoint: {
          every: this.timing.saveEveryTicks,
          save: async (now) => {
            const whole = Date.now() - checkpointed >= this.timing.checkpointMs;
            if (whole) checkpointed = Date.now();
            return this.store.save(job.id, this.owner, this.timing.leaseMs, now.next, whole ? now : undefined);
          },
        },
      });
    } catch (error) {
      // The worker stops between two ticks: the state is whole there.
      if (signal?.aborted) throw new Stopping(state.next, state);
      throw error;
    }
    if (!finished(prepared.setup, state)) {
      // Asked to cancel (or its lease lost: then this matches nothing): the state as it stands is where a resume starts.
      await this.store.finish(job.id, this.owner, { status: 'cancelled', checkpoint: state, progressDone: state.next });
      return;
    }
    const outcome = await replayOutcome(prepared.setup, state, new Date(input.from), new Date(input.to));
    const { executions: _executions, ...answer } = this.backtester.answer(prepared, state, outcome, []);
    await this.store.finish(job.id, this.owner, { status: 'succeeded', result: { ...answer, tradeList: outcome.trades }, progressDone: state.next });
  }

  private async runOptimisation(job: BacktestJobRow, signal?: AbortSignal): Promise<void> {
    const { kind: _kind, strategyId, ...input } = job.input as z.infer<typeof backtestJobBody> & OptimisationInput;
    const plan = await this.optimiser.plan(job.userId, strategyId, input, JOB_WORK);
    // Each replay is a trial's report: small, so every save is a checkpoint.
    let replays = (job.checkpoint as { replays: Array<Trial | null> } | null)?.replays ?? [];
    try {
      const result = await this.optimiser.search(plan, input, {
        signal,
        done: replays,
        progress: (now) => {
          replays = [...now];
          return this.store.save(job.id, this.owner, this.timing.leaseMs, replays.length, { replays });
        },
      });
      await this.store.finish(job.id, this.owner, { status: 'succeeded', result, progressDone: plan.replays });
    } catch (error) {
      if (signal?.aborted) throw new Stopping(replays.length, { replays });
      if (!(error instanceof OptimisationStopped)) throw error;
      await this.store.finish(job.id, this.owner, { status: 'cancelled', checkpoint: { replays }, progressDone: replays.length });
    }
  }

  private async owned(userId: string, jobId: string): Promise<BacktestJobRow> {
    const row = await this.store.get(jobId);
    if (!row || row.userId !== userId) throw tradingErrors.backtestJobNotFound();
    return row;
  }
}

/** The worker stops mid-job: where the job stands, to give it back. */
class Stopping extends Error {
  constructor(
    readonly progressDone: number,
    readonly checkpoint: unknown,
  ) {
    super('the worker is stopping');
  }
}

function jobView(row: BacktestJobRow): JobView {
  return {
    id: row.id,
    strategyId: row.strategyId,
    kind: row.kind,
    status: row.status,
    cancelRequested: row.cancelRequested,
    progress: { done: row.progressDone, total: row.progressTotal, unit: row.kind === 'backtest' ? 'ticks' : 'replays', percent: row.progressTotal > 0 ? (row.progressDone / row.progressTotal) * 100 : 100 },
    input: row.input as Record<string, unknown>,
    result: (row.result ?? null) as JobView['result'],
    error: row.error,
    attempts: row.attempts,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    finishedAt: row.finishedAt ? row.finishedAt.toISOString() : null,
  };
}
