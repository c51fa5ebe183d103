import { z } from 'zod';
import { MODEL_PROVIDERS } from '../../platform/model-providers.js';
import { quantRules } from './rules.js';
import { CANDLE_INTERVALS, SYMBOL_PATTERN } from './market-data.js';
import { BACKTEST_JOB_KINDS, BACKTEST_JOB_STATUSES, CHARGE_BOUNDARIES, CHARGE_STATUSES, EXECUTION_STATUSES, KILL_SWITCH_MODES, RUNTIME_STATUSES, TRIGGER_TYPES, VISIBILITIES } from './tables.js';

/** Bounds of our own choosing (docs/trading.md). */
export const TRADING_LIMITS = {
  universe: 20,
  dataSources: 10,
  instructionsChars: 4000,
  descriptionChars: 2000,
  backtestTicks: 10_000,
  /** A backtest's work: ticks × symbols × candles read per symbol (`slow`). */
  backtestCandleReads: 4_000_000,
  /** A backtest's feed work: the minute prices behind the distinct candles it reads (a 1d candle is 1,440). */
  backtestPrices: 20_000_000,
} as const;

const symbol = z.string().regex(SYMBOL_PATTERN, 'a symbol such as BTC-USD');
const candleInterval = z.enum(Object.keys(CANDLE_INTERVALS) as [string, ...string[]]);

const definitionBase = {
  universe: z.array(symbol).min(1).max(TRADING_LIMITS.universe).refine((list) => new Set(list).size === list.length, 'symbols must not repeat'),
  dataSources: z.array(z.string().min(1).max(100)).min(1).max(TRADING_LIMITS.dataSources).describe('Market-data providers: `embedded` (computed prices), `imported` (tollgate trading import) or, on a deployment with a live venue, `venue` (its own prices: the only source its runtimes may read)'),
  candleInterval,
};

const quantSignalVersion = z.object({
  kind: z.literal('quant_signal'),
  schemaVersion: z.literal(1),
  definition: z
    .object({
      instructions: z.string().trim().min(1).max(TRADING_LIMITS.instructionsChars).describe('Free text; `fast=`, `slow=`, `exposure=` and `short=` tokens set the signal unless `rules` is given (docs/trading.md)'),
      ...definitionBase,
      rules: quantRules.optional().describe('Declarative entry and exit conditions over indicators, sizing and protective levels (docs/trading.md#rules)'),
    })
    .strict(),
});

const llmAgentVersion = z.object({
  kind: z.literal('llm_agent'),
  schemaVersion: z.literal(1),
  definition: z
    .object({
      instructions: z.string().trim().min(1).max(TRADING_LIMITS.instructionsChars).describe("What the agent is told to do, put before each tick's data"),
      ...definitionBase,
      model: z.object({ provider: z.enum(MODEL_PROVIDERS), model: z.string().trim().min(1).max(200) }).strict().describe("The model asked each tick, with the runtime's account key for its provider"),
      lookback: z.number().int().min(5).max(200).optional().describe('Closed candles per symbol shown to the model (default 30)'),
      allowShort: z.boolean().optional().describe('Whether the model may sell a position below zero (default false: such a sell is cut to a close)'),
    })
    .strict(),
});

export const strategyVersionInput = z.discriminatedUnion('kind', [quantSignalVersion, llmAgentVersion]);
export type StrategyVersionInput = z.infer<typeof strategyVersionInput>;

/** Dollars of USDG as a decimal string, above 0. */
const usdAmount = z
  .string()
  .regex(/^\d{1,9}(\.\d{1,6})?$/, 'a dollar amount such as 0.50 (at most 6 decimals)')
  .refine((price) => Number(price) > 0, 'must be above 0');

export const accessSchema = z
  .object({
    priceUsd: usdAmount,
    payTo: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x-prefixed 20-byte address'),
  })
  .describe("Paid access (x402, USDG): what another user's trading account pays you, once, to backtest this strategy or activate runtimes of it; others never read its definitions");

export const createStrategyBody = z.object({
  name: z.string().trim().min(1).max(100),
  description: z.string().trim().min(1).max(TRADING_LIMITS.descriptionChars).optional().describe("What every reader is told about the strategy (a priced one's definitions are yours alone)"),
  visibility: z.enum(VISIBILITIES).default('private').describe('private: only you; public: every signed-in user may read it and launch runtimes from it'),
  access: accessSchema.optional(),
  version: strategyVersionInput,
});

export const versionSchema = z.object({
  id: z.string(),
  strategyId: z.string(),
  number: z.number().int(),
  kind: z.enum(['quant_signal', 'llm_agent']),
  schemaVersion: z.literal(1),
  summary: z
    .object({
      universe: z.array(z.string()),
      dataSources: z.array(z.string()),
      candleInterval: z.string(),
      model: z.object({ provider: z.enum(MODEL_PROVIDERS), model: z.string() }).optional().describe("An llm_agent's model: the provider a runtime's or backtest's account needs a key for"),
    })
    .describe('What anyone who may read the version sees of its definition: what it trades, on which candles and data, with which model'),
  definition: z
    .union([quantSignalVersion.shape.definition, llmAgentVersion.shape.definition])
    .nullable()
    .describe("null on another user's priced strategy: only its owner reads the definition (docs/trading.md#what-others-see)"),
  contentHash: z.string().describe('sha256 of the canonical JSON of kind, schemaVersion and definition'),
  createdAt: z.string(),
});

export const strategySchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  visibility: z.enum(VISIBILITIES),
  access: accessSchema.nullable(),
  latestVersion: versionSchema,
  versions: z.array(versionSchema).optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const accountSchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  type: z.literal('agent_wallet'),
  walletId: z.string(),
  address: z.string().nullable(),
  status: z.enum(['provisioning', 'active', 'failed']).describe("The agent wallet's status"),
  killSwitch: z.enum(KILL_SWITCH_MODES),
  maxExposureUsd: z.number().nullable().describe("Gross exposure all the account's runtimes may hold together (USD); null: none"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const createAccountBody = z.object({ name: z.string().trim().min(1).max(100).default('agent wallet') }).default({ name: 'agent wallet' });
export const accountLimitsBody = z.object({
  maxExposureUsd: z.number().positive().max(1e12).nullable().describe("Gross exposure in USD all the account's runtimes may hold together; null removes the limit"),
});
export const killSwitchBody = z.object({ mode: z.enum(KILL_SWITCH_MODES).describe("off; halt: no new risk (the strategy places nothing; protective exits and the owner's flatten still go); reduce_only: only orders that shrink a position") });

const usd = z.number().positive().max(1e12);
const maxAccessPriceUsd = usdAmount.optional();
export const riskLimitsInput = z.object({
  fundLimitUsd: usd.describe("The runtime's own capital: its paper book starts with it"),
  maxLeverage: z.number().positive().max(100),
  maxDrawdownPercent: z.number().positive().max(100),
});

export const createRuntimeBody = riskLimitsInput.extend({
  strategyVersionId: z.uuid(),
  accountId: z.uuid(),
  name: z.string().trim().min(1).max(100),
  cronExpression: z.string().trim().min(1).max(200).describe('5 fields, evaluated in UTC'),
  idempotencyKey: z.string().min(1).max(200).optional().describe('The launch key; or send it as the Idempotency-Key header (one of the two is required; both must agree)'),
  maxAccessPriceUsd: maxAccessPriceUsd.describe(
    "The most the account agrees to pay for another user's priced strategy (its access.priceUsd, charged once per account, at activation or at its first backtest); required to launch one",
  ),
});

export const statusBody = z.object({
  status: z.enum(['active', 'paused', 'stopped']).describe('paused: pause; active: resume; stopped: stop (terminal)'),
});

export const bookSchema = z.object({
  cashUsd: z.number(),
  equityUsd: z.number(),
  exposureUsd: z.number(),
  realizedPnlUsd: z.number(),
  unrealizedPnlUsd: z.number(),
  pnlUsd: z.number(),
  feesUsd: z.number(),
  peakEquityUsd: z.number(),
  drawdownPercent: z.number(),
  trades: z.number().int(),
  positions: z.array(
    z.object({ symbol: z.string(), qty: z.number(), avgPrice: z.number(), price: z.number(), stopLoss: z.number().optional(), takeProfit: z.number().optional() }).describe('stopLoss, takeProfit: the levels of the order that opened or grew it; a tick closes it once the price crosses one'),
  ),
  markedAt: z.string(),
});

export const runtimeSchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  strategyId: z.string(),
  strategyVersionId: z.string(),
  strategyVersionHash: z.string(),
  accountId: z.string(),
  cronExpression: z.string(),
  fundLimitUsd: z.number(),
  maxLeverage: z.number(),
  maxDrawdownPercent: z.number(),
  idempotencyKey: z.string(),
  status: z.enum(RUNTIME_STATUSES),
  statusReason: z.string().nullable(),
  book: bookSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const orderSchema = z.object({
  symbol: z.string(),
  side: z.enum(['buy', 'sell']),
  size: z.string(),
  status: z
    .enum(['filled', 'blocked', 'placing', 'rejected', 'unfilled'])
    .describe('placing: out at a live venue, not filled yet; rejected: the venue refused it, nothing filled; unfilled: a limit order the live venue could not fill within its price at once (immediate-or-cancel), nothing filled'),
  venue: z.string(),
  referencePrice: z.number().optional().describe("The feed's price when the order was decided"),
  limitPrice: z.string().optional().describe("A limit order's price, on the venue's tick (absent: a market order)"),
  quote: z.object({ bid: z.string(), ask: z.string() }).optional().describe("A live venue's executable quote the order was re-checked at right before it was sent (docs/trading.md#live-venues-trade-on-their-own-prices)"),
  stopLoss: z.number().optional(),
  takeProfit: z.number().optional(),
  trigger: z
    .object({ kind: z.enum(['stop', 'take_profit']), price: z.number() })
    .optional()
    .describe("A protective exit's: a stop fills from `price` (its level, or a bar's open past it) at the touch, a take-profit at `price` as a resting limit reached"),
  price: z.number().nullable(),
  notionalUsd: z.number(),
  feeUsd: z.number().nullable(),
});

export const executionSchema = z.object({
  id: z.string(),
  runtimeId: z.string(),
  triggerType: z.enum(TRIGGER_TYPES).describe("flatten: an order of the owner's flatten"),
  scheduledAt: z.string(),
  leg: z.number().int().describe('Which order of its tick: a tick places at most one order per symbol, each its own execution (0, 1, … in the order placed; docs/trading.md)'),
  status: z.enum(EXECUTION_STATUSES).describe(
    'completed; blocked: a risk limit stopped the order, or its re-check at a live venue\'s quote did (error.code price_moved, limit_at_quote); halted: the kill switch did; failed; placing: the order is out at a live venue and its fill not recorded yet; rejected: the venue refused the order; skipped: nothing decided, for a scheduled tick run after its next was due (error.code stale_tick) or a live venue\'s price older than TRADING_MAX_PRICE_AGE_SECONDS (stale_price)',
  ),
  attemptCount: z.number().int(),
  strategyVersionHash: z.string(),
  inputsDigest: z.string().nullable(),
  decision: z.record(z.string(), z.unknown()).nullable(),
  riskAssessment: z.record(z.string(), z.unknown()).nullable(),
  order: orderSchema.nullable(),
  error: z
    .object({
      message: z.string(),
      code: z.string().optional().describe('payment_refused: the agent wallet could not pay a metered tick; order_rejected: the venue refused the order; stale_tick, stale_price: see status skipped; price_moved, limit_at_quote: a live venue\'s order not sent after its re-check at the quote (status blocked)'),
      reason: z.string().optional(),
    })
    .nullable(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});

export const marketDataSchema = z.object({
  embedded: z.object({ symbols: z.string(), intervals: z.array(z.string()) }).describe('The data source embedded: computed prices for any symbol, any time'),
  imported: z
    .array(
      z.object({
        symbol: z.string(),
        interval: z.string(),
        ranges: z.array(z.object({ from: z.string(), to: z.string().describe('The start of the last candle'), candles: z.number().int() })).describe('Runs of consecutive candles, oldest first; between two runs is a gap'),
      }),
    )
    .describe('The data source imported (tollgate trading import), per symbol and interval'),
});

export const setProviderBody = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().min(1).max(1000) });
export const providerKeySchema = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().describe('masked: only the start and end are shown'), updatedAt: z.string().optional() });

export const flattenResult = z.object({
  runtime: runtimeSchema,
  executions: z.array(executionSchema).describe('The orders placed (or stopped) by this flatten, in order'),
});

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.uuid().optional().describe('The last id of the previous page'),
});

export const executionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: z.uuid().optional().describe('The last id of the previous page'),
});

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

export const strategyIdParams = z.object({ strategyId: z.uuid() });
export const runtimeIdParams = z.object({ runtimeId: z.uuid() });
export const chargeSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  runtimeId: z.string().nullable().describe('null: strategy access bought by a backtest'),
  boundary: z.enum(CHARGE_BOUNDARIES),
  subject: z.string().describe('What was bought: strategy:<id>, runtime:<id> or tick:<runtime id>:<trigger>:<scheduledAt>'),
  amount: z.string().describe('Atomic units of the asset'),
  payTo: z.string(),
  payer: z.string().describe("The account's agent wallet"),
  network: z.string(),
  asset: z.string(),
  status: z.enum(CHARGE_STATUSES),
  reason: z.string().nullable(),
  transaction: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const chargesQuery = executionsQuery;

export const accountIdParams = z.object({ accountId: z.uuid() });
