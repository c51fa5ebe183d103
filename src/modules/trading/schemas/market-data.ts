// Response schema of the market data a deployment has: the embedded feed and the imported candles' coverage.
import { z } from 'zod';

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
