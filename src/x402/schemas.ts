import { z } from 'zod';

// The spec's x402 payment-required object, for the OpenAPI description of every 402 answer.
export const requirementSchema = z.object({
  scheme: z.literal('exact'),
  network: z.string(),
  asset: z.string(),
  amount: z.string(),
  payTo: z.string(),
  maxTimeoutSeconds: z.number().int(),
  extra: z.looseObject({ name: z.string(), version: z.string() }),
});

export const paymentRequiredSchema = z.object({
  x402Version: z.literal(2),
  resource: z.object({ url: z.string(), description: z.string(), mimeType: z.string(), serviceName: z.string() }),
  accepts: z.array(requirementSchema),
  error: z.string().optional(),
});
