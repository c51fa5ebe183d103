import { z } from 'zod';
import { UPLOAD_STATUSES } from './tables.js';

/** The spec's Limits table and upload configuration for image storage. */
export const STORAGE_LIMITS = {
  maxFileBytes: 5_000_000,
  /** The whole multipart request: the file plus its part headers and boundaries. */
  maxRequestBytes: 5_100_000,
  maxPixels: 16_000_000,
  /** 0.005 USDG in atomic units (6 decimals). */
  priceAtomic: '5000',
  priceUsd: '0.005',
  quoteLifetimeSeconds: 3600,
  retentionDays: 365,
  mimeTypes: ['image/jpeg', 'image/png', 'image/webp'],
} as const;

export const orderSchema = z.object({
  id: z.uuid(),
  status: z.enum(UPLOAD_STATUSES),
  amountAtomic: z.string(),
  retentionDays: z.number().int(),
  transactionHash: z.string().nullable(),
  quoteExpiresAt: z.string(),
  expiresAt: z.string().nullable(),
  paymentUrl: z.string(),
  cid: z.string().nullable(),
  ipfsUri: z.string().nullable(),
  url: z.string().nullable(),
});
export type OrderView = z.infer<typeof orderSchema>;

export const configSchema = z.object({
  available: z.boolean(),
  upload: z.object({
    priceUsd: z.string(),
    maxFileBytes: z.number().int(),
    maxPixels: z.number().int(),
    mimeTypes: z.array(z.string()),
    retentionDays: z.number().int(),
  }),
  delivery: z.object({ included: z.boolean(), renewalsAvailable: z.boolean() }),
});

export const orderParams = z.object({ id: z.string().max(64) });
export const uploadQuery = z.object({ orderId: z.string().max(64).optional() });
export const reconcileBody = z.object({
  transactionHash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x followed by 64 hexadecimal characters'),
});
