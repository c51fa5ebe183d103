import { z } from 'zod';

/** A top-up buys $1 to $1,000 of credits (100–100,000 cents); 1 cent costs 10,000 atomic units of the 6-decimal USDG. */
export const TOP_UP_LIMITS = { minCents: 100, maxCents: 100_000 } as const;
/** An operator grant moves at most this much at once (CLI). */
export const MAX_GRANT_CENTS = 10_000_000;

export const balanceSchema = z.object({ balanceUsdCents: z.number().int() });

export const topUpBody = z.object({
  amountUsdCents: z
    .number()
    .int()
    .min(TOP_UP_LIMITS.minCents)
    .max(TOP_UP_LIMITS.maxCents)
    .describe(`credit cents to buy (${TOP_UP_LIMITS.minCents}–${TOP_UP_LIMITS.maxCents}); the x402 price is this × 10,000 atomic USDG`),
});

export const topUpSchema = z.object({
  id: z.string(),
  amountUsdCents: z.number().int(),
  status: z.enum(['settling', 'settled', 'failed']),
  payer: z.string(),
  transaction: z.string().nullable(),
  createdAt: z.string(),
});

export const topUpResult = z.object({ topUp: topUpSchema, balanceUsdCents: z.number().int() });

export type TopUpView = z.infer<typeof topUpSchema>;
