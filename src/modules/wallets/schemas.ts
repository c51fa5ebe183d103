import { z } from 'zod';

/** Bound of a wallet's serialized `metadata` (documented in docs/wallets.md, "Wallet create"). */
export const METADATA_MAX_BYTES = 16 * 1024;
export const METADATA_KEY_MAX = 100;
export const SUPPORTED_CHAIN_TYPES = ['ethereum'] as const;

const metadataValue = z.union([z.string(), z.number(), z.boolean()]);
export const metadataSchema = z
  .record(z.string().min(1).max(METADATA_KEY_MAX), metadataValue)
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= METADATA_MAX_BYTES, `metadata must be at most ${METADATA_MAX_BYTES} bytes serialized`);

export const walletIdParams = z.object({ walletId: z.string() });
export const credentialParams = z.object({ walletId: z.string(), credentialId: z.string() });

export const createWalletBody = z.object({
  externalId: z.string().min(1).max(200),
  name: z.string().min(1).max(200),
  // Any short string here: reusing an externalId with another chainType is a 409 (spec rule 1),
  // which must be reachable; an unsupported chainType on a new wallet is a 400 from the service.
  chainType: z.string().min(1).max(32).default('ethereum').describe('`ethereum` (the only supported value)'),
  metadata: metadataSchema.nullable().optional(),
});

export const createCredentialBody = z.object({
  name: z.string().min(1).max(100),
  expiresAt: z.iso.datetime({ offset: true }).optional().describe('ISO 8601, in the future'),
});

export const walletSchema = z.object({
  id: z.string(),
  externalId: z.string(),
  name: z.string(),
  provider: z.string(),
  address: z.string().nullable(),
  chainType: z.string(),
  status: z.enum(['provisioning', 'active', 'failed']),
  metadata: z.record(z.string(), metadataValue).nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const credentialSchema = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  status: z.enum(['active', 'revoked']),
  lastUsedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
});
export const createdCredentialSchema = credentialSchema.extend({ secret: z.string() });

export const createWalletResult = z.object({
  created: z.boolean(),
  wallet: walletSchema,
  credential: createdCredentialSchema.nullable(),
});

export type WalletView = z.infer<typeof walletSchema>;
export type CredentialView = z.infer<typeof credentialSchema>;
export type CreatedCredentialView = z.infer<typeof createdCredentialSchema>;
export type CreateWalletInput = z.infer<typeof createWalletBody>;
