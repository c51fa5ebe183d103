import { z } from 'zod';
import { AGENT_STATUSES, AGENT_TYPES } from './tables.js';

/** What an agent costs: one month of a hosted runtime, in credit cents (the spec's 10 USD). */
export const AGENT_PRICE_CENTS = 1000;

export const createAgentBody = z.object({
  name: z.string().trim().min(1).max(100),
  type: z.enum(AGENT_TYPES),
});

export const runtimeInstanceSchema = z.object({
  id: z.string(),
  appName: z.string(),
  url: z.string(),
  cpus: z.number().int(),
  memoryMb: z.number().int(),
  volumeSizeGb: z.number().int(),
  startedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  stoppedAt: z.string().nullable(),
  removedAt: z.string().nullable(),
});

export const agentSchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  type: z.enum(AGENT_TYPES),
  spec: z.literal('monthly'),
  status: z.enum(AGENT_STATUSES).describe('pending (deployment queued or retrying), running, expired (its month ended), failed (deployment gave up; refunded)'),
  attempts: z.number().int(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const listedAgentSchema = agentSchema.extend({ runtimeInstance: runtimeInstanceSchema.nullable() });

export const createAgentResult = z.object({
  agent: agentSchema,
  charge: z.object({ amountUsdCents: z.number().int(), balanceAfterUsdCents: z.number().int() }),
});

export type AgentView = z.infer<typeof agentSchema>;
export type RuntimeInstanceView = z.infer<typeof runtimeInstanceSchema>;
