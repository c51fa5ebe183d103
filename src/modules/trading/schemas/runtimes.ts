// Request and response schemas of runtimes: the launch body with its risk limits, status moves, the book, and
// executions with their orders.
import { z } from 'zod';
import { EXECUTION_STATUSES, RUNTIME_STATUSES, TRIGGER_TYPES } from '../tables.js';
import { maxAccessPriceUsd } from './common.js';

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

export const flattenResult = z.object({
  runtime: runtimeSchema,
  executions: z.array(executionSchema).describe('The orders placed (or stopped) by this flatten, in order'),
});

export const runtimeIdParams = z.object({ runtimeId: z.uuid() });
