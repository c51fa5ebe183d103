import type { z } from 'zod';
import { isPricedFor } from '../metering/access.js';
import { ANSWERED_WORK, type Backtester, type PreparedReplay, type WorkLimits } from './backtest.js';
import type { Catalog } from '../catalog.js';
import { tradingErrors } from '../errors.js';
import { checkPaths, combinations, foldsOf, optimise, replaysOf, rulesWith, type OptimiseHooks } from './optimise.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import { candlesNeeded } from '../strategies/rules.js';
import type { optimisationBody, optimisationResult } from '../schemas/backtests.js';

/** Tick evaluations an answered optimisation may make (trials × ticks, walk-forward's out-of-sample replays included); a job may make more. */
export const ANSWERED_TICK_RUNS = 1_000_000;

/**
 * Optimises a rules strategy's parameters for a user (optimise.ts does the search). The checks, in order:
 * the strategy is visible and its definition the caller's to read (an optimisation names paths into the rules
 * and answers the values that won: another user's priced strategy is refused before anything of it is read);
 * the version is a quant_signal with rules, and every path names a number of them; then the backtest's checks
 * (window, work, coverage) over the widest trial, the one that reads the most candles per tick; then the work
 * of all the trials together.
 */
export class Optimiser {
  constructor(
    private readonly catalog: Catalog,
    private readonly backtester: Backtester,
  ) {}

  async run(userId: string, strategyId: string, input: z.infer<typeof optimisationBody>, hooks: OptimiseHooks = {}): Promise<z.infer<typeof optimisationResult>> {
    return this.search(await this.plan(userId, strategyId, input), input, hooks);
  }

  /** The search over a planned window: the answer, or OptimisationStopped when `hooks.progress` stops it. */
  async search(plan: OptimisationPlan, input: z.infer<typeof optimisationBody>, hooks: OptimiseHooks = {}): Promise<z.infer<typeof optimisationResult>> {
    // The trials read the same candles tick for tick: a stored feed's window was read once (backtest.ts replayFeed).
    const result = await optimise(plan.prepared.setup, { from: new Date(input.from), to: new Date(input.to) }, input, hooks);
    return { strategyVersionId: plan.prepared.version.id, strategyVersionHash: plan.prepared.version.contentHash, ticks: plan.prepared.setup.ticks.length, ...result };
  }

  /** Every check, and what the search will do: its replays (a job's progress counts them). */
  async plan(userId: string, strategyId: string, input: z.infer<typeof optimisationBody>, work: WorkLimits & { tickRuns: number } = { ...ANSWERED_WORK, tickRuns: ANSWERED_TICK_RUNS }): Promise<OptimisationPlan> {
    const strategy = await this.catalog.visibleStrategy(userId, strategyId);
    if (isPricedFor(strategy, userId)) throw tradingErrors.invalidBacktest("an optimisation reads and changes a strategy's rules: only a strategy whose definition you read (yours, or a free public one) can be optimised");
    let trials = 0;
    const prepared = await this.backtester.prepare(userId, strategyId, input, work, (version) => {
      const definition = version.definition as QuantSignalDefinition;
      if (version.kind !== 'quant_signal' || !definition.rules) throw tradingErrors.invalidBacktest('only a quant_signal version with rules has parameters to optimise');
      checkPaths(definition.rules, input.parameters);
      const combos = combinations(input);
      trials = combos.length;
      // The widest trial: the window's work and coverage are checked for it, so every trial's candles are there.
      const valid = combos.map((c) => rulesWith(definition.rules!, c)).filter((r) => typeof r !== 'string');
      const widest = valid.reduce((a, b) => (candlesNeeded(b) > candlesNeeded(a) ? b : a), definition.rules);
      return { ...definition, rules: widest };
    });
    const ticks = prepared.setup.ticks.length;
    const folds = input.walkForward ? foldsOf(ticks, input.walkForward.folds, input.walkForward.inSamplePercent) : null;
    const runs = folds ? folds.reduce((n, f) => n + trials * (f.inSample[1] - f.inSample[0]) + (f.outOfSample[1] - f.outOfSample[0]), 0) : trials * ticks;
    if (runs > work.tickRuns) {
      throw tradingErrors.invalidWindow(`the trials replay ${runs} ticks in all, above ${work.tickRuns}: fewer trials, a shorter window or a sparser cron (or run it as a background job: POST /agentic-trading/backtests)`);
    }
    return { prepared, replays: replaysOf(input, trials) };
  }
}

export interface OptimisationPlan {
  prepared: PreparedReplay;
  replays: number;
}
