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

export const permit2ApprovalBody = z
  .object({
    amount: z
      .string()
      .regex(/^\d{1,78}$/, 'amount must be an integer string of atomic units')
      // Checks run on after a failed regex: BigInt only sees digits.
      .refine((a) => !/^\d+$/.test(a) || BigInt(a) < 2n ** 256n, 'amount must fit in a uint256')
      .describe("the allowance Permit2 gets over the chain's asset, atomic units (it replaces the current one; at least the largest upto maximum to pay)"),
  })
  .strict();
export const permit2ApprovalSchema = z.object({
  network: z.string(),
  asset: z.string().describe("the token approved: the chain's asset"),
  spender: z.string().describe('Permit2 (0x000000000022D473030F116dDEE9F6B43aC78BA3)'),
  amount: z.string().describe('the allowance asked for'),
  status: z.enum(['confirmed', 'pending', 'unchanged']).describe('`confirmed`: mined, `allowance` read after it; `pending`: sent, not seen mined yet; `unchanged`: the allowance already was `amount`, nothing sent'),
  allowance: z.string().describe("Permit2's allowance as the chain reads it (after the transaction when confirmed, else before)"),
  transaction: z.string().nullable().describe('the approve transaction the wallet sent; null when nothing was sent'),
  gasLimit: z.string().nullable().describe('its gas limit, decided before sending (at most the ceiling); null when nothing was sent'),
});
export type Permit2ApprovalView = z.infer<typeof permit2ApprovalSchema>;

export type WalletView = z.infer<typeof walletSchema>;
export type CredentialView = z.infer<typeof credentialSchema>;
export type CreatedCredentialView = z.infer<typeof createdCredentialSchema>;
export type CreateWalletInput = z.infer<typeof createWalletBody>;
