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

/** GET /credits/ledger pages 1–100 entries at a time, 50 by default. */
export const LEDGER_PAGE = { min: 1, max: 100, default: 50 } as const;

export const ledgerQuery = z.object({
  limit: z.coerce.number().int().min(LEDGER_PAGE.min).max(LEDGER_PAGE.max).default(LEDGER_PAGE.default).describe(`entries per page (${LEDGER_PAGE.min}–${LEDGER_PAGE.max}, default ${LEDGER_PAGE.default})`),
  before: z.uuid().optional().describe("the id of the previous page's last entry: entries strictly older than it"),
});

/** What moved the credits, as the ledger names it (purchase and renewal of an agent, top-up, operator grant, refund). */
export const LEDGER_CAUSE_KINDS = ['purchase', 'renewal', 'top_up', 'grant', 'refund'] as const;

export const ledgerEntrySchema = z.object({
  id: z.string(),
  amountUsdCents: z.number().int().describe('signed: positive into your account, negative out of it'),
  balanceAfterUsdCents: z.number().int().describe('your balance right after this entry'),
  cause: z.object({
    kind: z.enum(LEDGER_CAUSE_KINDS),
    id: z.string().nullable().describe('the agent (purchase, renewal), the top-up (top_up), the refunded entry (refund); null for a grant'),
  }),
  createdAt: z.string(),
});

export type LedgerEntryView = z.infer<typeof ledgerEntrySchema>;
