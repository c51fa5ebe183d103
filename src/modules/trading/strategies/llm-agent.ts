// The llm_agent strategy kind: what its model is asked each tick (instructions, recent candles with a few
// indicators, the book and the limits), the one tool it must answer with, and that answer checked into at
// most one order per symbol. No I/O here: agent-decider.ts asks the model (or the decision cache).
import { z } from 'zod';
import type { Book } from '../engine/book.js';
import { digestOf } from '../../../platform/canonical-json.js';
import type { Candle } from '../data/market-data.js';
import type { RiskLimits } from '../engine/risk.js';
import { indicatorValues, type Indicator } from './rules.js';
import { TRADING_LIMITS } from '../schemas/common.js';
import type { ModelProvider } from '../../../platform/model-providers.js';

/** An `llm_agent` version's definition (schemaVersion 1). */
export interface LlmAgentDefinition {
  instructions: string;
  universe: string[];
  dataSources: string[];
  candleInterval: string;
  model: { provider: ModelProvider; model: string };
  /** Closed candles per symbol shown to the model (default 30). */
  lookback?: number;
  /** Whether a sell may take a position below zero (default false: a sell is cut to what is held). */
  allowShort?: boolean;
}

export const DEFAULT_LOOKBACK = 30;
export const DECISION_TOOL = 'submit_decision';
const RATIONALE_CHARS = 2_000;

/** One order the model may ask for (checked against the tick's prices by `ordersOf`). */
const agentOrder = z
  .object({
    symbol: z.string(),
    side: z.enum(['buy', 'sell']),
    size: z.number().positive().finite().optional(),
    notionalUsd: z.number().positive().finite().optional(),
    type: z.enum(['market', 'limit']),
    limitPrice: z.number().positive().finite().optional(),
    stopLoss: z.number().positive().finite().optional(),
    takeProfit: z.number().positive().finite().optional(),
  })
  .strict()
  .refine((o) => (o.size === undefined) !== (o.notionalUsd === undefined), 'give exactly one of size and notionalUsd')
  .refine((o) => (o.type === 'limit') === (o.limitPrice !== undefined), 'a limit order has a limitPrice, a market order none');

/** The answer the tool takes: validated with zod, so anything else the model writes places nothing. */
export const agentDecision = z
  .object({
    orders: z
      .array(agentOrder)
      .max(TRADING_LIMITS.universe)
      .refine((orders) => new Set(orders.map((o) => o.symbol)).size === orders.length, 'at most one order per symbol'),
    rationale: z.string().max(RATIONALE_CHARS),
  })
  .strict();
export type AgentDecision = z.infer<typeof agentDecision>;
export type AgentOrder = AgentDecision['orders'][number];

/** The same shape as JSON schema, for the provider's tool mode. */
export const decisionTool = {
  name: DECISION_TOOL,
  description: "Submit this tick's trading decision: at most one order per symbol (none to hold) and a short rationale.",
  parameters: {
    type: 'object',
    additionalProperties: false,
    required: ['orders', 'rationale'],
    properties: {
      orders: {
        type: 'array',
        maxItems: TRADING_LIMITS.universe,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['symbol', 'side', 'type'],
          properties: {
            symbol: { type: 'string', description: 'One of the universe' },
            side: { type: 'string', enum: ['buy', 'sell'] },
            size: { type: 'number', description: 'Units of the symbol (give this or notionalUsd)' },
            notionalUsd: { type: 'number', description: 'USD to trade at the current price (give this or size)' },
            type: { type: 'string', enum: ['market', 'limit'], description: 'A limit order fills this tick only if marketable at the current price' },
            limitPrice: { type: 'number' },
            stopLoss: { type: 'number', description: 'Closes the position once the price crosses it (below the price for a buy, above for a sell)' },
            takeProfit: { type: 'number', description: 'Closes the position once the price reaches it (above the price for a buy, below for a sell)' },
          },
        },
      },
      rationale: { type: 'string', maxLength: RATIONALE_CHARS },
    },
  },
} as const;

const SYSTEM_PROMPT = [
  'You are the trading agent of one Tollgate runtime. Each tick you get your instructions, the recent closed candles',
  'of your universe with a few indicators, your paper book and your risk limits. Decide what to do now and answer only',
  `by calling ${DECISION_TOOL}: at most one order per symbol (none to hold) and a short rationale. Prices are in USD.`,
  'An order that adds exposure beyond your limits is cut to what they allow; a sell below zero is cut to a close unless',
  'your limits allow shorts (allowShort); orders that reduce a position always pass.',
].join(' ');

export interface AgentView {
  at: Date;
  definition: LlmAgentDefinition;
  limits: RiskLimits;
  book: Book;
  equityUsd: number;
  prices: Record<string, number>;
  candles: Record<string, Candle[]>;
}

/** The indicators each symbol of the prompt carries. */
const PROMPT_INDICATORS: Record<string, Indicator> = { sma20: { type: 'sma', period: 20 }, ema12: { type: 'ema', period: 12 }, ema26: { type: 'ema', period: 26 }, rsi14: { type: 'rsi', period: 14 } };

/** The tick's prompt, and its digest (what `decision.promptDigest` records). */
export function agentPrompt(view: AgentView): { system: string; user: string; digest: string } {
  const universe = view.definition.universe.map((symbol) => {
    const candles = view.candles[symbol]!;
    return {
      symbol,
      price: view.prices[symbol],
      indicators: indicatorValues(PROMPT_INDICATORS, candles),
      candles: candles.map((c) => [c.start, c.open, c.high, c.low, c.close]),
    };
  });
  const user = JSON.stringify({
    instructions: view.definition.instructions,
    at: view.at.toISOString(),
    candleInterval: view.definition.candleInterval,
    candleColumns: ['start', 'open', 'high', 'low', 'close'],
    universe,
    book: {
      cashUsd: Number(view.book.cashUsd),
      equityUsd: view.equityUsd,
      positions: Object.entries(view.book.positions).map(([symbol, p]) => ({ symbol, ...p, qty: Number(p.qty), avgPrice: Number(p.avgPrice) })),
    },
    limits: { ...view.limits, allowShort: view.definition.allowShort ?? false },
  });
  return { system: SYSTEM_PROMPT, user, digest: digestOf({ system: SYSTEM_PROMPT, user }) };
}

/** The orders the decision asks for (none: hold), checked against the tick's prices; a reason when one cannot be placed as asked. */
export function ordersOf(decision: AgentDecision, universe: readonly string[], prices: Record<string, number>): { orders: Array<AgentOrder & { size: number }> } | { invalid: string } {
  const orders = [];
  for (const order of decision.orders) {
    if (!universe.includes(order.symbol)) return { invalid: `${order.symbol} is not in the universe` };
    const price = prices[order.symbol]!;
    const size = order.size ?? order.notionalUsd! / price;
    const up = order.side === 'buy';
    if (order.stopLoss !== undefined && (up ? order.stopLoss >= price : order.stopLoss <= price)) return { invalid: `the stopLoss ${order.stopLoss} is on the wrong side of the price ${price}` };
    if (order.takeProfit !== undefined && (up ? order.takeProfit <= price : order.takeProfit >= price)) return { invalid: `the takeProfit ${order.takeProfit} is on the wrong side of the price ${price}` };
    orders.push({ ...order, size });
  }
  return { orders };
}

