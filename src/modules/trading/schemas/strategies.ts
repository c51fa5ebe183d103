// Request and response schemas of strategies and their versions: the definitions a version carries (quant_signal,
// llm_agent), paid access, and the strategy as answered.
import { z } from 'zod';
import { MODEL_PROVIDERS } from '../../../platform/model-providers.js';
import { CANDLE_INTERVALS, SYMBOL_PATTERN } from '../data/market-data.js';
import { quantRules } from '../strategies/rules.js';
import { VISIBILITIES } from '../tables.js';
import { TRADING_LIMITS, usdAmount } from './common.js';

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

export const strategyIdParams = z.object({ strategyId: z.uuid() });
