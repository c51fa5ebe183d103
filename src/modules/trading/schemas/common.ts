// What the trading schemas share: the bounds of our own choosing, a dollar amount, and the list pages.
import { z } from 'zod';

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

/** Dollars of USDG as a decimal string, above 0. */
export const usdAmount = z
  .string()
  .regex(/^\d{1,9}(\.\d{1,6})?$/, 'a dollar amount such as 0.50 (at most 6 decimals)')
  .refine((price) => Number(price) > 0, 'must be above 0');

/** The most an account agrees to pay for another user's priced strategy (a runtime's or a backtest's body). */
export const maxAccessPriceUsd = usdAmount.optional();

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.uuid().optional().describe('The last id of the previous page'),
});

export const executionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(50),
  before: z.uuid().optional().describe('The last id of the previous page'),
});
