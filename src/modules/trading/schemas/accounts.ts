// Request and response schemas of trading accounts: the account, its limits and kill switch, its model-provider
// keys and its metered charges.
import { z } from 'zod';
import { MODEL_PROVIDERS } from '../../../platform/model-providers.js';
import { CHARGE_BOUNDARIES, CHARGE_STATUSES, KILL_SWITCH_MODES } from '../tables.js';
import { executionsQuery } from './common.js';

export const accountSchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  type: z.literal('agent_wallet'),
  walletId: z.string(),
  address: z.string().nullable(),
  status: z.enum(['provisioning', 'active', 'failed']).describe("The agent wallet's status"),
  killSwitch: z.enum(KILL_SWITCH_MODES),
  maxExposureUsd: z.number().nullable().describe("Gross exposure all the account's runtimes may hold together (USD); null: none"),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const createAccountBody = z.object({ name: z.string().trim().min(1).max(100).default('agent wallet') }).default({ name: 'agent wallet' });
export const accountLimitsBody = z.object({
  maxExposureUsd: z.number().positive().max(1e12).nullable().describe("Gross exposure in USD all the account's runtimes may hold together; null removes the limit"),
});
export const killSwitchBody = z.object({ mode: z.enum(KILL_SWITCH_MODES).describe("off; halt: no new risk (the strategy places nothing; protective exits and the owner's flatten still go); reduce_only: only orders that shrink a position") });

export const setProviderBody = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().min(1).max(1000) });
export const providerKeySchema = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().describe('masked: only the start and end are shown'), updatedAt: z.string().optional() });

export const chargeSchema = z.object({
  id: z.string(),
  accountId: z.string(),
  runtimeId: z.string().nullable().describe('null: strategy access bought by a backtest'),
  boundary: z.enum(CHARGE_BOUNDARIES),
  subject: z.string().describe('What was bought: strategy:<id>, runtime:<id> or tick:<runtime id>:<trigger>:<scheduledAt>'),
  amount: z.string().describe('Atomic units of the asset'),
  payTo: z.string(),
  payer: z.string().describe("The account's agent wallet"),
  network: z.string(),
  asset: z.string(),
  status: z.enum(CHARGE_STATUSES),
  reason: z.string().nullable(),
  transaction: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const chargesQuery = executionsQuery;

export const accountIdParams = z.object({ accountId: z.uuid() });
