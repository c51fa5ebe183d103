import { z } from 'zod';
import { isAddress, getAddress } from 'viem';

export const projectIdParams = z.object({ projectId: z.uuid() });
export const createProjectBody = z.object({ name: z.string().min(1).max(200) });
export const createApiKeyBody = z.object({ name: z.string().min(1).max(100) });
export const createMerchantBody = z.object({
  name: z.string().min(1).max(200),
  payTo: z
    .string()
    .refine((value) => isAddress(value, { strict: false }), 'payTo must be an EVM address')
    .transform((value) => getAddress(value)),
});

export const apiKeySchema = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  status: z.string(),
  lastUsedAt: z.string().nullable(),
  createdAt: z.string(),
});
export const createdApiKeySchema = apiKeySchema.extend({ secret: z.string() });

export const merchantSchema = z.object({
  id: z.string(),
  name: z.string(),
  enabled: z.boolean(),
  payTo: z.string(),
  network: z.string(),
  asset: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const projectSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
  apiKeys: z.array(apiKeySchema),
  merchants: z.array(merchantSchema),
});

export type ApiKeyView = z.infer<typeof apiKeySchema>;
export type MerchantView = z.infer<typeof merchantSchema>;
export type ProjectView = z.infer<typeof projectSchema>;
