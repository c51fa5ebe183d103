import { z } from 'zod';

// The transaction API's contract (OpenAPI is generated from these). Query values arrive as strings.

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
export const CHAIN_PARAM = /^(all|eip155:[1-9]\d{0,9}|[1-9]\d{0,9})$/;

const integerParam = (name: string, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: `${name} must be an integer` })
    .int({ error: `${name} must be an integer` })
    .min(min, { error: max === Number.MAX_SAFE_INTEGER ? `${name} must be at least ${min}` : `${name} must be from ${min} to ${max}` })
    .max(max, { error: `${name} must be from ${min} to ${max}` });

export const listQuerySchema = z.object({
  recipient: z
    .string()
    .regex(ADDRESS, { error: 'recipient must be an EVM address (0x and 40 hex digits, any case)' })
    .optional()
    .describe('Receiving address (case-insensitive); omitted lists every recipient'),
  chain: z
    .string()
    .regex(CHAIN_PARAM, { error: "chain must be 'all', a CAIP-2 id such as eip155:4663, or a chain id such as 4663" })
    .optional()
    .describe("Network: CAIP-2 (eip155:4663) or bare chain id (4663); 'all' = every indexed network; default the primary indexed chain"),
  page: integerParam('page', 1).default(1).describe('Page number, from 1 (newest-first listing only)'),
  pageSize: integerParam('pageSize', 1, 100).default(10).describe('Records per page or cursor batch, 1 to 100'),
  afterSequence: integerParam('afterSequence', 0)
    .optional()
    .describe('Exclusive recipientSequence cursor; needs recipient and a specific chain; ascending and contiguous'),
  before: z
    .string()
    .regex(BYTES32, { error: 'before must be a paymentId (0x and 64 hex digits)' })
    .optional()
    .describe(
      'Cursor of the newest-first listing: the paymentId of the last record already read; answers the records after it in that order (older ones). Unlike page, it neither repeats nor skips a record while new ones are published',
    ),
  transactionHash: z
    .string()
    .regex(BYTES32, { error: 'transactionHash must be 0x and 64 hex digits' })
    .optional()
    .describe('Only the payments this transaction carried (usually one; a batched settlement carries several), in log order'),
});
export type ListQueryInput = z.input<typeof listQuerySchema>;

export const paymentIdParams = z.object({
  paymentId: z.string().regex(BYTES32, { error: 'paymentId must be 0x and 64 hex digits' }),
});

export const attestationQuerySchema = z.object({
  chain: listQuerySchema.shape.chain.describe('Network whose signing domain to return; default the primary indexed chain'),
});

export const transactionRecordSchema = z.object({
  from: z.string(),
  to: z.string(),
  transactionHash: z.string(),
  value: z.string().describe('Atomic units'),
  tokenAddress: z.string(),
  tokenSymbol: z.string(),
  tokenDecimals: z.number().int(),
  logIndex: z.number().int(),
  authorizationId: z.string().describe('The EIP-3009 authorization nonce (bytes32)'),
  blockTimestamp: z.number().int().describe('Unix seconds'),
  blockNumber: z.string(),
  facilitator: z.string().describe('Address of the relayer that sent the transaction'),
  chainId: z.number().int(),
  attestation: z.object({
    paymentId: z.string(),
    payer: z.string(),
    recipient: z.string(),
    recipientSequence: z.string(),
    token: z.string(),
    amount: z.string(),
  }),
  signature: z.string().describe('EIP-712 signature of attestation under the domain of GET /x402scan/attestation'),
  signer: z.string(),
});
export type TransactionRecord = z.infer<typeof transactionRecordSchema>;

const typedField = z.object({ name: z.string(), type: z.string() });
export const attestationInfoSchema = z.object({
  domain: z.object({ name: z.string(), version: z.string(), chainId: z.number().int() }),
  types: z.record(z.string(), z.array(typedField)),
  primaryType: z.string(),
  signer: z.string(),
});
