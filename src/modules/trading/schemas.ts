import { z } from 'zod';
import { MODEL_PROVIDERS } from '../../platform/model-providers.js';
import { quantRules } from './rules.js';
import { CANDLE_INTERVALS, SYMBOL_PATTERN } from './market-data.js';
import { CHARGE_BOUNDARIES, CHARGE_STATUSES, EXECUTION_STATUSES, KILL_SWITCH_MODES, RUNTIME_STATUSES, TRIGGER_TYPES, VISIBILITIES } from './tables.js';

/** Bounds of our own choosing (docs/trading.md). */
export const TRADING_LIMITS = {
  universe: 20,
  dataSources: 10,
  instructionsChars: 4000,
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
  dataSources: z.array(z.string().min(1).max(100)).min(1).max(TRADING_LIMITS.dataSources).describe('Market-data providers: `embedded` (computed prices) or `imported` (tollgate trading import)'),
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
  .describe("Paid access (x402, USDG): what another user's trading account pays you, once, to activate runtimes of this strategy");

export const createStrategyBody = z.object({
  name: z.string().trim().min(1).max(100),
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
  definition: z.union([quantSignalVersion.shape.definition, llmAgentVersion.shape.definition]),
  contentHash: z.string().describe('sha256 of the canonical JSON of kind, schemaVersion and definition'),
  createdAt: z.string(),
});

export const strategySchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
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
export const killSwitchBody = z.object({ mode: z.enum(KILL_SWITCH_MODES).describe('off; halt: no orders; reduce_only: only orders that shrink a position') });

const usd = z.number().positive().max(1e12);
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
  idempotencyKey: z.string().min(1).max(200),
  maxAccessPriceUsd: usdAmount
    .optional()
    .describe("The most the account agrees to pay for another user's priced strategy (its access.priceUsd, charged once per account at activation); required to launch one"),
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
  stopLoss: z.number().optional(),
  takeProfit: z.number().optional(),
  price: z.number().nullable(),
  notionalUsd: z.number(),
  feeUsd: z.number().nullable(),
});

export const executionSchema = z.object({
  id: z.string(),
  runtimeId: z.string(),
  triggerType: z.enum(TRIGGER_TYPES).describe("flatten: an order of the owner's flatten"),
  scheduledAt: z.string(),
  status: z.enum(EXECUTION_STATUSES).describe(
    'completed; blocked: a risk limit stopped the order; halted: the kill switch did; failed; placing: the order is out at a live venue and its fill not recorded yet; rejected: the venue refused the order; skipped: a scheduled tick run after its next was due (stale), nothing decided',
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
      code: z.string().optional().describe('payment_refused: the agent wallet could not pay a metered tick; order_rejected: the venue refused the order; stale_tick: see status skipped'),
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

export const backtestBody = riskLimitsInput.extend({
  versionId: z.uuid().optional().describe('Default: the latest version'),
  from: z.iso.datetime({ offset: true }),
  to: z.iso.datetime({ offset: true }),
  cronExpression: z.string().trim().min(1).max(200).default('* * * * *'),
  accountId: z.uuid().optional().describe("An llm_agent's backtest: the account whose provider key pays the model calls"),
  maxModelCalls: z.number().int().min(0).max(10_000).optional().describe("An llm_agent's backtest (required): model calls at most; decisions kept from earlier ticks with the same inputs cost none"),
  executionsLimit: z.number().int().min(0).max(500).default(100).describe('Executions answered (one page); the report and the curve cover every tick'),
  executionsOffset: z.number().int().min(0).default(0).describe('Executions skipped before the page: the replay is deterministic, so the same body with the next offset answers the next page'),
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
    closedTrades: z.number().int().describe('Fills that closed (part of) a position'),
    winRatePercent: z.number().nullable(),
    profitFactor: z.number().nullable().describe('Gross realized profit over gross realized loss; null without a loss'),
    trades: z.number().int().describe('Every fill'),
    feesUsd: z.number(),
    exposurePercent: z.number().describe('Share of ticks that ended holding a position'),
  }),
  equityCurve: z.array(z.object({ at: z.string(), equityUsd: z.number() })).describe('The equity after each tick, thinned evenly to at most 1,000 points'),
  executionsTotal: z.number().int().describe('Executions the replay made; `executions` is the page asked for'),
  executions: z.array(executionSchema.pick({ scheduledAt: true, status: true, inputsDigest: true, decision: true, riskAssessment: true, order: true })),
  book: bookSchema,
});

export const strategyIdParams = z.object({ strategyId: z.uuid() });
export const runtimeIdParams = z.object({ runtimeId: z.uuid() });
export const chargeSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  runtimeId: z.string(),
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
