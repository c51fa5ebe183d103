// Request and response schemas of backtests: the answered replay and its report, trade lists, optimisation, and
// background jobs.
import { z } from 'zod';
import { BACKTEST_JOB_KINDS, BACKTEST_JOB_STATUSES } from '../tables.js';
import { maxAccessPriceUsd } from './common.js';
import { bookSchema, executionSchema, riskLimitsInput } from './runtimes.js';

/** One round trip of a backtest or a runtime (trade-list.ts). */
export const tradeSchema = z
  .object({
    symbol: z.string(),
    side: z.enum(['long', 'short']),
    status: z.enum(['open', 'closed']).describe('open: still held at the end; its P&L marks the rest at markPrice'),
    entryAt: z.string().describe('The fill that opened it'),
    entryPrice: z.number().describe('Volume-weighted price of the fills that opened or grew it'),
    exitAt: z.string().nullable().describe('The fill that closed it; null while open'),
    exitPrice: z.number().nullable().describe('Volume-weighted price of the fills that shrank or closed it; null while open'),
    size: z.string().describe('The largest quantity held during the trade'),
    fills: z.number().int(),
    feesUsd: z.number().describe('The fees of its fills (a flipping fill\'s split by quantity between the trade it closes and the one it opens)'),
    pnlUsd: z.number().describe('Before fees'),
    netPnlUsd: z.number().describe('After fees: what the trade added to the equity'),
    returnPercent: z.number().describe('netPnlUsd over what its entries paid'),
    exitReason: z.string().nullable().describe('signal, stop_loss, take_profit, trailing_stop or flatten; null while open'),
    markPrice: z.number().nullable().describe("An open trade's mark: the feed's price at the end of the window (a runtime: now)"),
  })
  .describe('A round trip: from a position leaving zero to its return to zero (or flip)');

export const backtestBody = riskLimitsInput.extend({
  versionId: z.uuid().optional().describe('Default: the latest version'),
  from: z.iso.datetime({ offset: true }),
  to: z.iso.datetime({ offset: true }),
  cronExpression: z.string().trim().min(1).max(200).default('* * * * *'),
  accountId: z
    .uuid()
    .optional()
    .describe("The account whose provider key pays an llm_agent's model calls, and whose agent wallet pays the access to another user's priced strategy (required for either)"),
  maxAccessPriceUsd: maxAccessPriceUsd.describe(
    "Another user's priced strategy: the most the account agrees to pay for its access (access.priceUsd, charged once per account, at its first backtest or runtime activation)",
  ),
  maxModelCalls: z.number().int().min(0).max(10_000).optional().describe("An llm_agent's backtest (required): model calls at most; decisions kept from earlier ticks with the same inputs cost none"),
  executionsLimit: z.number().int().min(0).max(500).default(100).describe('Executions answered (one page); the report and the curve cover every tick'),
  executionsOffset: z.number().int().min(0).default(0).describe('Executions skipped before the page: the replay is deterministic, so the same body with the next offset answers the next page'),
  tradeListLimit: z.number().int().min(0).max(10_000).default(1_000).describe('Trades answered in tradeList (one page); the report covers them all, and the CSV route answers every one'),
  tradeListOffset: z.number().int().min(0).default(0).describe('Trades skipped before the page'),
});

export const backtestResult = z.object({
  strategyVersionId: z.string(),
  strategyVersionHash: z.string(),
  ticks: z.number().int(),
  stoppedAt: z.string().nullable().describe('The tick where the replay stopped (see stopReason); later ticks are not run'),
  stopReason: z.enum(['risk_breach', 'max_model_calls']).nullable().describe('risk_breach: where a runtime would have gone to review; max_model_calls: the next tick needed a model call past maxModelCalls'),
  modelCalls: z.number().int().describe("An llm_agent's model calls made (decisions kept from earlier runs cost none)"),
  report: z.object({
    startEquityUsd: z.number(),
    endEquityUsd: z.number().describe('Marked at `to`'),
    returnPercent: z.number(),
    maxDrawdownPercent: z.number().describe("The largest fall from a running peak of the ticks' equity"),
    sharpe: z.number().nullable().describe('Annualized by the ticks per year, risk-free rate 0; null under two returns or none varying'),
    sortino: z.number().nullable().describe('As sharpe over the downside deviation; null when no tick lost'),
    closedTrades: z.number().int().describe('Trades (round trips, see tradeList) closed by the end of the window'),
    winRatePercent: z.number().nullable().describe('Closed trades whose P&L after fees is positive, in percent; null without a closed trade'),
    profitFactor: z.number().nullable().describe("The closed trades' profits over their losses, both after fees; null without a loss"),
    trades: z.number().int().describe('Every fill'),
    feesUsd: z.number(),
    exposurePercent: z.number().describe('Share of ticks that ended holding a position'),
    assumptions: z.array(z.string()).describe("How the replay fills: the paper venue's rules, limit orders immediate-or-cancel, protective levels checked against each bar's high and low (docs/trading.md#backtests)"),
  }),
  equityCurve: z.array(z.object({ at: z.string(), equityUsd: z.number() })).describe('The equity after each tick, thinned evenly to at most 1,000 points'),
  executionsTotal: z.number().int().describe('Executions the replay made; `executions` is the page asked for'),
  executions: z.array(executionSchema.pick({ scheduledAt: true, status: true, inputsDigest: true, decision: true, riskAssessment: true, order: true })),
  tradeListTotal: z.number().int().describe('Trades the replay made; `tradeList` is the page asked for'),
  tradeList: z.array(tradeSchema),
  book: bookSchema,
});

export const OBJECTIVES = ['sharpe', 'return', 'profit_factor'] as const;

/** One numeric parameter of the rules: a dot path into them and the values it takes. */
export const optimisationParameter = z
  .object({
    path: z
      .string()
      .regex(/^[a-zA-Z0-9_]+(\.[a-zA-Z0-9_]+){0,4}$/)
      .describe('A number in the rules, by its dot path: indicators.fast.period, entry.long.0.right, sizing.exposure, stopLossPercent (a protective level may be absent from the rules)'),
    min: z.number(),
    max: z.number(),
    step: z.number().positive().describe('Grid: min, min + step, … up to max; random draws among the same values'),
  })
  .refine((p) => p.max >= p.min, 'max must be at least min')
  .refine((p) => (p.max - p.min) / p.step <= 10_000, 'at most 10,001 values per parameter');

export const optimisationSearch = z.object({
  parameters: z.array(optimisationParameter).min(1).max(6),
  method: z.enum(['grid', 'random']).default('grid').describe('grid: every combination (refused past `trials`); random: `trials` distinct combinations drawn with `seed`'),
  trials: z.number().int().min(1).max(1_000).default(100),
  seed: z.number().int().min(0).max(2 ** 31 - 1).default(1).describe('The random search draws the same trials for the same seed'),
  objective: z.enum(OBJECTIVES).default('sharpe').describe('What ranks the trials: the report\'s sharpe, returnPercent or profitFactor (after fees); a trial without it (null) ranks last'),
  walkForward: z
    .object({
      folds: z.number().int().min(1).max(20),
      inSamplePercent: z.number().min(50).max(95).default(75).describe("Each fold's in-sample share: the out-of-sample part after it is the rest"),
    })
    .optional()
    .describe('Rolling walk-forward: out-of-sample parts follow each other to the end of the window, each after its in-sample part'),
  top: z.number().int().min(1).max(100).default(10).describe('Trials answered per window, best first'),
});

/** POST .../optimise: a backtest's window and limits, and the search (optimise.ts). */
export const optimisationBody = riskLimitsInput
  .extend({
    versionId: z.uuid().optional().describe('Default: the latest version; a quant_signal version with rules'),
    from: z.iso.datetime({ offset: true }),
    to: z.iso.datetime({ offset: true }),
    cronExpression: z.string().trim().min(1).max(200).default('* * * * *'),
  })
  .extend(optimisationSearch.shape);

const trialSchema = z.object({
  values: z.record(z.string(), z.number()).describe('The value each parameter path took'),
  objective: z.number().nullable().describe('The objective over the window the trial ran; null when the report has none (e.g. no loss: no profit factor) or the rules refused the values'),
  report: backtestResult.shape.report.nullable(),
  invalid: z.string().optional().describe('Why the rules refused these values (e.g. a period of 1); the trial did not run'),
});

export const optimisationResult = z.object({
  strategyVersionId: z.string(),
  strategyVersionHash: z.string(),
  ticks: z.number().int().describe("The window's ticks"),
  objective: z.enum(OBJECTIVES),
  method: z.enum(['grid', 'random']),
  trialsRun: z.number().int().describe('Replays of a trial over an in-sample part (or the whole window), out-of-sample replays not counted'),
  trials: z.array(trialSchema).describe('Without walkForward: the best `top` trials over the whole window, best first'),
  best: trialSchema.nullable(),
  folds: z
    .array(
      z.object({
        fold: z.number().int(),
        inSample: z.object({ from: z.string(), to: z.string(), ticks: z.number().int(), best: trialSchema.nullable(), trials: z.array(trialSchema) }),
        outOfSample: z.object({
          from: z.string(),
          to: z.string(),
          ticks: z.number().int(),
          values: z.record(z.string(), z.number()).nullable().describe("The in-sample best's values, replayed here unseen"),
          objective: z.number().nullable(),
          report: backtestResult.shape.report.nullable(),
        }),
      }),
    )
    .describe('With walkForward: each fold, in sample and out of sample side by side'),
  walkForwardEfficiency: z.number().nullable().describe("Out-of-sample objective over in-sample, averaged over the folds (1: held up unseen; near 0 or below: fitted to the in-sample noise)"),
});

/** POST /agentic-trading/backtests: a backtest or an optimisation run in the background (backtest-jobs.ts). */
export const backtestJobBody = z.discriminatedUnion('kind', [
  backtestBody.omit({ executionsLimit: true, executionsOffset: true, tradeListLimit: true, tradeListOffset: true }).extend({ kind: z.literal('backtest'), strategyId: z.uuid() }),
  optimisationBody.extend({ kind: z.literal('optimisation'), strategyId: z.uuid() }),
]);

/** A finished background backtest: the answered backtest's fields, every trade, no executions (stored, not replayed). */
export const backtestJobResult = backtestResult.omit({ executions: true });

export const backtestJobSchema = z.object({
  id: z.string(),
  strategyId: z.string(),
  kind: z.enum(BACKTEST_JOB_KINDS),
  status: z.enum(BACKTEST_JOB_STATUSES).describe('queued → running → succeeded | failed | cancelled; a cancelled or failed job resumes (queued again) from its checkpoint'),
  cancelRequested: z.boolean().describe('Cancel asked while running: the worker stops at its next save'),
  progress: z.object({
    done: z.number().int(),
    total: z.number().int(),
    unit: z.enum(['ticks', 'replays']).describe('A backtest counts ticks; an optimisation its replays (trials, and out-of-sample replays)'),
    percent: z.number(),
  }),
  input: z.record(z.string(), z.unknown()).describe('The body it was created with'),
  result: z.union([backtestJobResult, optimisationResult]).nullable().describe('Once succeeded (GET one job; lists leave it out)'),
  error: z.string().nullable(),
  attempts: z.number().int().describe('Runs started (a resume, or a worker taking over a lapsed lease, starts another)'),
  createdAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().nullable(),
});
export const backtestJobIdParams = z.object({ jobId: z.uuid() });
