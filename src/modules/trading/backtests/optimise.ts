// Parameter optimisation of a quant_signal rules strategy (docs/trading.md#optimisation), as backtesting.py's
// `optimize` and freqtrade's hyperopt do it: each trial is the strategy with some numeric parameters of its rules
// set (grid: every combination; random: `trials` distinct combinations drawn with a seeded generator), replayed
// by the backtest's own loop (replay.ts), ranked by the objective (Sharpe, return, or profit factor, after fees).
// With walk-forward the window is cut into folds, each an in-sample part where the trials are ranked and the
// out-of-sample part after it where the best one is replayed unseen: the two reported side by side.
import type { z } from 'zod';
import type { BacktestReport } from './backtest-report.js';
import { tradingErrors } from '../errors.js';
import type { QuantSignalDefinition } from '../strategies/quant-signal.js';
import { replayOutcome, replayTicks, startState, type ReplaySetup } from './replay.js';
import { candlesNeeded, quantRules, type QuantRules } from '../strategies/rules.js';

import type { OBJECTIVES, optimisationParameter, optimisationSearch } from '../schemas/backtests.js';
import { seededRandom } from '../../../platform/seeded-random.js';

export type Objective = (typeof OBJECTIVES)[number];

export type Parameter = z.infer<typeof optimisationParameter>;
export type Search = z.infer<typeof optimisationSearch>;

/** A trial: the parameter values it set, and its report over the window it ran (null: the rules refused those values). */
export interface Trial {
  values: Record<string, number>;
  objective: number | null;
  report: BacktestReport | null;
  invalid?: string;
}

export interface FoldResult {
  fold: number;
  inSample: { from: string; to: string; ticks: number; best: Trial | null; trials: Trial[] };
  outOfSample: { from: string; to: string; ticks: number; values: Record<string, number> | null; objective: number | null; report: BacktestReport | null };
}

export interface OptimisationResult {
  objective: Objective;
  method: 'grid' | 'random';
  trialsRun: number;
  /** Without walk-forward: the trials over the whole window, best first. */
  trials: Trial[];
  best: Trial | null;
  /** With walk-forward: each fold's in-sample best and its out-of-sample replay, side by side. */
  folds: FoldResult[];
  /** With walk-forward: the out-of-sample objective over the in-sample one, averaged over the folds where both exist. */
  walkForwardEfficiency: number | null;
}

/** The values a parameter takes: min, min + step, … ≤ max, each rounded to the step's decimals (no float drift). */
export function valuesOf(p: Parameter): number[] {
  const decimals = Math.max(decimalsOf(p.step), decimalsOf(p.min));
  const out: number[] = [];
  for (let i = 0; ; i++) {
    const v = Number((p.min + i * p.step).toFixed(decimals));
    if (v > p.max + 1e-12) break;
    out.push(v);
  }
  return out;
}
const decimalsOf = (n: number) => (Number.isInteger(n) ? 0 : (String(n).split('.')[1]?.length ?? 0));

/** The combinations a search runs, in order: the grid (refused past `trials`), or `trials` distinct draws from it. */
export function combinations(search: Pick<Search, 'parameters' | 'method' | 'trials' | 'seed'>): Array<Record<string, number>> {
  const axes = search.parameters.map((p) => ({ path: p.path, values: valuesOf(p) }));
  const size = axes.reduce((n, a) => n * a.values.length, 1);
  const at = (index: number) => {
    const combo: Record<string, number> = {};
    for (let i = axes.length - 1, rest = index; i >= 0; i--) {
      const axis = axes[i]!;
      combo[axis.path] = axis.values[rest % axis.values.length]!;
      rest = Math.floor(rest / axis.values.length);
    }
    return Object.fromEntries(axes.map((a) => [a.path, combo[a.path]!]));
  };
  if (search.method === 'grid') {
    if (size > search.trials) throw tradingErrors.invalidBacktest(`the grid holds ${size} combinations, above trials (${search.trials}): raise trials, widen the steps, or use method random`);
    return Array.from({ length: size }, (_, i) => at(i));
  }
  // Random: distinct indices of the grid, drawn by mulberry32 from the seed (the same seed, the same trials).
  const count = Math.min(search.trials, size);
  const next = seededRandom(search.seed);
  const picked = new Set<number>();
  const order: number[] = [];
  while (order.length < count) {
    const index = Math.floor(next() * size);
    if (!picked.has(index)) picked.add(index), order.push(index);
  }
  return order.map(at);
}


const LEVELS = ['stopLossPercent', 'takeProfitPercent', 'trailingStopPercent'];

/**
 * The rules with the values set, checked as a published version's would be: each path must name a number in
 * the rules (or a protective level, which may be absent), and the result must be valid rules (a period of 1
 * is refused). A refusal is the reason; the parameters' paths are checked once up front (checkPaths).
 */
export function rulesWith(rules: QuantRules, values: Record<string, number>): QuantRules | string {
  const copy = structuredClone(rules) as unknown as Record<string, unknown>;
  for (const [path, value] of Object.entries(values)) {
    const keys = path.split('.');
    let node: Record<string, unknown> = copy;
    for (const key of keys.slice(0, -1)) node = node[key] as Record<string, unknown>;
    node[keys.at(-1)!] = value;
  }
  const parsed = quantRules.safeParse(copy);
  return parsed.success ? parsed.data : parsed.error.issues.map((i) => `${i.path.join('.') || 'rules'}: ${i.message}`).join('; ');
}

/** Refuses a path that does not name a number of these rules (400 invalid_backtest naming it). */
export function checkPaths(rules: QuantRules, parameters: readonly Parameter[]): void {
  const seen = new Set<string>();
  for (const { path } of parameters) {
    if (seen.has(path)) throw tradingErrors.invalidBacktest(`the parameter ${path} is named twice`);
    seen.add(path);
    if (LEVELS.includes(path)) continue;
    let node: unknown = rules;
    for (const key of path.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
    if (typeof node !== 'number') throw tradingErrors.invalidBacktest(`${path} names no number in the rules (a parameter is a dot path to one, e.g. indicators.fast.period)`);
  }
}

/** The most candles any trial reads per tick: what the window's coverage is checked for. */
export function mostCandlesRead(rules: QuantRules, combos: ReadonlyArray<Record<string, number>>): number {
  return Math.max(candlesNeeded(rules), ...combos.map((c) => rulesWith(rules, c)).map((r) => (typeof r === 'string' ? 0 : candlesNeeded(r))));
}

const objectiveOf = (report: BacktestReport, objective: Objective): number | null =>
  objective === 'sharpe' ? report.sharpe : objective === 'return' ? report.returnPercent : report.profitFactor;

/** Best first; a trial without the objective (null, or refused) after every one with it, in trial order. */
const ranked = (trials: Trial[]) => [...trials].sort((a, b) => (b.objective ?? -Infinity) - (a.objective ?? -Infinity));

/**
 * Folds of a rolling walk-forward over `ticks`: with F folds and in-sample share p, an out-of-sample part has
 * n·(1−p)/(p + F·(1−p)) ticks and an in-sample part p/(1−p) times that; fold k's in-sample part starts k
 * out-of-sample parts in, so the out-of-sample parts tile the end of the window.
 */
export function foldsOf(tickCount: number, folds: number, inSamplePercent: number): Array<{ inSample: [number, number]; outOfSample: [number, number] }> {
  const p = inSamplePercent / 100;
  const oos = Math.floor((tickCount * (1 - p)) / (p + folds * (1 - p)));
  const is = tickCount - folds * oos;
  if (oos < 2 || is < 2) throw tradingErrors.invalidBacktest(`${tickCount} ticks make folds too short for ${folds} folds (an out-of-sample part of ${oos} ticks): use fewer folds or a longer window`);
  return Array.from({ length: folds }, (_, k) => ({ inSample: [k * oos, k * oos + is], outOfSample: [k * oos + is, (k + 1) * oos + is] }));
}

/** Where an optimisation stands, for a background job (progress, resume) and a caller that gives up (signal). */
export interface OptimiseHooks {
  signal?: AbortSignal;
  /** Replays an earlier run finished, in the order they run (a job's checkpoint): they are not run again. */
  done?: ReadonlyArray<Trial | null>;
  /**
   * After each replay (a trial, or a fold's out-of-sample one: null when its fold had no best): every replay
   * finished so far, of `total`. Its answer false stops the search there (a job cancelled, or its lease lost).
   */
  progress?: (done: ReadonlyArray<Trial | null>, total: number) => Promise<boolean> | boolean;
}

/** Stopped by its progress hook before the end: what was done is in the hook's last call. */
export class OptimisationStopped extends Error {
  override readonly name = 'OptimisationStopped';
}

/** The replays an optimisation runs: the trials over each part, and with walk-forward each fold's out-of-sample one. */
export function replaysOf(search: Pick<Search, 'walkForward'>, trials: number): number {
  const folds = search.walkForward?.folds ?? 1;
  return trials * folds + (search.walkForward ? folds : 0);
}

/**
 * Runs the search over `setup` (whose version is the rules strategy, its ticks the whole window). Each trial is
 * a fresh replay from the fund limit: the in-sample parts of the folds, then each fold's best out of sample.
 */
export async function optimise(setup: ReplaySetup, window: { from: Date; to: Date }, search: Search, hooks: OptimiseHooks = {}): Promise<OptimisationResult> {
  const definition = setup.version.definition as QuantSignalDefinition;
  const rules = definition.rules!;
  const combos = combinations(search);
  const parts = search.walkForward ? foldsOf(setup.ticks.length, search.walkForward.folds, search.walkForward.inSamplePercent) : [{ inSample: [0, setup.ticks.length] as [number, number], outOfSample: null }];
  const total = replaysOf(search, combos.length);
  const finished: Array<Trial | null> = [...(hooks.done ?? [])];
  let next = 0;
  /** The next replay: taken from an earlier run's when it finished there, else run and reported. */
  const step = async (run: () => Promise<Trial | null>): Promise<Trial | null> => {
    if (next < finished.length) return finished[next++]!;
    hooks.signal?.throwIfAborted();
    const trial = await run();
    finished.push(trial);
    next += 1;
    if (hooks.progress && !(await hooks.progress(finished, total))) throw new OptimisationStopped(`stopped after ${finished.length} of ${total} replays`);
    return trial;
  };
  const replay = async (values: Record<string, number>, [start, end]: [number, number]): Promise<Trial> => {
    const candidate = rulesWith(rules, values);
    if (typeof candidate === 'string') return { values, objective: null, report: null, invalid: candidate };
    const ticks = setup.ticks.slice(start, end);
    const trialSetup: ReplaySetup = { ...setup, ticks, version: { ...setup.version, definition: { ...definition, rules: candidate } } };
    const state = await replayTicks(trialSetup, startState(setup.limits.fundLimitUsd), { signal: hooks.signal });
    // The whole window reports as a backtest of it would; a fold's part from its first tick to its last.
    const whole = start === 0 && end === setup.ticks.length;
    const { report } = await replayOutcome(trialSetup, state, whole ? window.from : ticks[0]!, whole ? window.to : ticks.at(-1)!);
    return { values, objective: objectiveOf(report, search.objective), report };
  };

  const folds: FoldResult[] = [];
  let all: Trial[] = [];
  for (const [k, part] of parts.entries()) {
    const trials: Trial[] = [];
    for (const values of combos) trials.push((await step(() => replay(values, part.inSample)))!);
    const order = ranked(trials);
    const best = order.find((t) => t.objective !== null) ?? null;
    if (!part.outOfSample) {
      all = order;
      continue;
    }
    const outOfSample = part.outOfSample;
    const out = await step(async () => (best ? replay(best.values, outOfSample) : null));
    const span = ([a, b]: [number, number]) => ({ from: setup.ticks[a]!.toISOString(), to: setup.ticks[b - 1]!.toISOString(), ticks: b - a });
    folds.push({
      fold: k + 1,
      inSample: { ...span(part.inSample), best, trials: order.slice(0, search.top) },
      outOfSample: { ...span(part.outOfSample), values: best?.values ?? null, objective: out?.objective ?? null, report: out?.report ?? null },
    });
  }
  const ratios = folds.filter((f) => f.inSample.best?.objective && f.outOfSample.objective !== null).map((f) => f.outOfSample.objective! / f.inSample.best!.objective!);
  return {
    objective: search.objective,
    method: search.method,
    trialsRun: combos.length * parts.length,
    trials: all.slice(0, search.top),
    best: all.find((t) => t.objective !== null) ?? null,
    folds,
    walkForwardEfficiency: ratios.length ? ratios.reduce((a, b) => a + b, 0) / ratios.length : null,
  };
}
