import { z } from 'zod';
import { isAddress, getAddress } from 'viem';

export const projectIdParams = z.object({ projectId: z.uuid() });
export const apiKeyParams = projectIdParams.extend({ keyId: z.uuid() });
export const merchantParams = projectIdParams.extend({ merchantId: z.uuid() });
export const createProjectBody = z.object({ name: z.string().min(1).max(200) });
export const createApiKeyBody = z.object({ name: z.string().min(1).max(100) });
const merchantName = z.string().min(1).max(200).describe('Unique within the project (409 merchant_name_taken)');
export const createMerchantBody = z.object({
  name: merchantName,
  payTo: z
    .string()
    .refine(isPayToAddress, 'payTo must be an EVM address (a mixed-case one must carry a valid EIP-55 checksum)')
    .transform((value) => getAddress(value)),
});

/** The owner's changes to a project (extension): the queue that receives its payment-intent events, the wallet that pays its refunds. */
export const updateProjectBody = z
  .object({
    intentEventsQueueId: z
      .uuid()
      .nullable()
      .optional()
      .describe("One of this project's event queues to receive its payment_intent.* events, or null for none; omitted: unchanged"),
    refundWalletId: z
      .uuid()
      .nullable()
      .optional()
      .describe("The Tollgate wallet that pays the project's refunds (docs/intents.md#refunds), or null for none; omitted: unchanged"),
    refundWalletCredential: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('A wallet credential (svc_wallet_…) of that wallet, required with a refundWalletId: it proves the right to pay from the wallet, and refunds are its payments (revoking it stops them). Never stored or shown'),
  })
  .superRefine((value, check) => {
    if (value.refundWalletId && !value.refundWalletCredential) {
      check.addIssue({ code: 'custom', path: ['refundWalletCredential'], message: 'required with a refundWalletId: a wallet credential of that wallet' });
    }
  });
export type ProjectChange = z.infer<typeof updateProjectBody>;

/** The owner's changes to a merchant (extension); an omitted field is unchanged. */
export const updateMerchantBody = z.object({
  name: merchantName.optional(),
  enabled: z.boolean().optional().describe('false: no new intents for it, and its open intents cannot be paid (403 merchant_disabled)'),
});

/** Single-case hex carries no checksum; a mixed-case address must pass EIP-55, so a typo is refused, not paid to. */
function isPayToAddress(value: string): boolean {
  if (!isAddress(value, { strict: false })) return false;
  const hex = value.slice(2);
  return hex === hex.toLowerCase() || hex === hex.toUpperCase() || isAddress(value, { strict: true });
}

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
  intentEventsQueueId: z.string().nullable().describe('The event queue receiving payment_intent.* events (extension), or null'),
  refundWalletId: z.string().nullable().describe("The wallet that pays the project's refunds (extension), or null"),
  createdAt: z.string(),
  updatedAt: z.string(),
  apiKeys: z.array(apiKeySchema),
  merchants: z.array(merchantSchema),
});

export type ApiKeyView = z.infer<typeof apiKeySchema>;
export type MerchantView = z.infer<typeof merchantSchema>;
export type ProjectView = z.infer<typeof projectSchema>;

/** GET /v1/projects/{projectId}/audit: newest first, paged by `before` (an entry's seq). */
export const auditQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z.coerce.number().int().positive().optional(),
});
export const auditEntrySchema = z.object({
  seq: z.number().int().describe('Position in the trail; pass it as `before` for the next page'),
  at: z.string().describe('When (the database clock)'),
  actor: z.object({ kind: z.string().describe('operator, identity, mgmt, project_key, wallet or oauth'), id: z.string().describe("The user or credential id; `operator` for the service's operator") }),
  action: z.string(),
  target: z.string().nullable(),
  requestId: z.string(),
  via: z.enum(['api', 'cli']),
  outcome: z.enum(['ok', 'refused', 'error']),
  status: z.number().int().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
