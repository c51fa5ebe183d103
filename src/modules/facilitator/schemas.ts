import { z } from 'zod';

// Response shapes of the x402 v2 facilitator API, for the OpenAPI description.
export const verifyResponseSchema = z.object({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string().optional(),
  /** batch-settlement: the channel's on-chain snapshot (channelId, balance, totalClaimed, withdrawRequestedAt, refundNonce). */
  extra: z.record(z.string(), z.unknown()).optional(),
});

export const settleResponseSchema = z.object({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  payer: z.string().optional(),
  transaction: z.string().describe('Transaction hash; empty when nothing was broadcast'),
  network: z.string(),
  amount: z.string().optional().describe('upto and batch-settlement: the atomic amount this settle moved'),
  extra: z.record(z.string(), z.unknown()).optional(),
});

export const supportedResponseSchema = z.object({
  kinds: z.array(z.object({ x402Version: z.number().int(), scheme: z.string(), network: z.string(), extra: z.record(z.string(), z.unknown()).optional() })),
  extensions: z.array(z.string()),
  signers: z.record(z.string(), z.array(z.string())),
});
