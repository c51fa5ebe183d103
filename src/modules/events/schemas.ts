import { z } from 'zod';
import { LIMITS } from './limits.js';

// Request and response schemas of the Events API: the contract /openapi.json is generated from.

const int = (bounds: { min: number; max: number }) => z.number().int().min(bounds.min).max(bounds.max);
const timestamp = z.string().describe('ISO 8601');

export const jsonObject = z.record(z.string(), z.unknown()).describe(`JSON object, at most ${LIMITS.payloadBytes} bytes serialized`);

// ---- queues

export const createQueueBody = z.object({
  name: z.string().min(LIMITS.queueName.min).max(LIMITS.queueName.max),
  defaultLeaseSeconds: int(LIMITS.leaseSeconds).default(LIMITS.defaultLeaseSeconds),
  maxAttempts: int(LIMITS.maxAttempts).default(LIMITS.defaultMaxAttempts),
});

export const queueSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['active']),
  defaultLeaseSeconds: z.number().int(),
  maxAttempts: z.number().int(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const queueParams = z.object({ queueId: z.string() });

// ---- events

export const publishBody = z.object({
  payload: jsonObject,
  deduplicationKey: z.string().min(LIMITS.deduplicationKey.min).max(LIMITS.deduplicationKey.max).optional(),
  delaySeconds: int(LIMITS.delaySeconds).optional(),
});

export const eventStatusSchema = z.enum(['available', 'leased', 'acked', 'dead', 'expired', 'superseded']);

export const eventSchema = z.object({
  id: z.string(),
  queueId: z.string(),
  scheduleId: z.string().nullable(),
  status: eventStatusSchema,
  payload: jsonObject,
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  deduplicationKey: z.string().nullable(),
  availableAt: timestamp,
  leaseExpiresAt: timestamp.nullable(),
  scheduledFor: timestamp.nullable(),
  expiresAt: timestamp.nullable(),
  lastError: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
  finishedAt: timestamp.nullable(),
});

export const eventParams = z.object({ eventId: z.string() });

// Every field is optional, so an empty body (or none at all: Fastify then gives null) is a valid claim.
export const claimBody = z
  .object({
    leaseSeconds: int(LIMITS.leaseSeconds).optional().describe("default: the queue's defaultLeaseSeconds"),
    waitSeconds: int(LIMITS.waitSeconds).default(0),
  })
  .nullish();

export const claimedSchema = z
  .object({ event: eventSchema, leaseToken: z.string(), leaseExpiresAt: timestamp })
  .nullable();

const leaseToken = z.string().min(1).max(200);

export const heartbeatBody = z.object({ leaseToken, leaseSeconds: int(LIMITS.leaseSeconds).optional() });
export const heartbeatSchema = z.object({ event: eventSchema, leaseExpiresAt: timestamp });
export const ackBody = z.object({ leaseToken });
export const nackBody = z.object({
  leaseToken,
  error: z.string().max(LIMITS.errorLength).optional(),
  retryDelaySeconds: int(LIMITS.retryDelaySeconds).optional(),
});

export const deadEventsQuery = z.object({
  limit: z.coerce.number().int().min(LIMITS.listLimit.min).max(LIMITS.listLimit.max).default(LIMITS.listLimit.default),
  before: z.uuid().optional().describe('id of the last event of the previous page'),
});

// ---- schedules

export const scheduleBody = z.object({
  queueId: z.string(),
  externalId: z.string().min(LIMITS.externalId.min).max(LIMITS.externalId.max),
  name: z.string().min(LIMITS.scheduleName.min).max(LIMITS.scheduleName.max),
  schedule: z.object({
    type: z.literal('cron'),
    expression: z.string().min(1).max(200).describe('5 fields: minute hour day-of-month month day-of-week'),
    timezone: z.string().min(1).max(100).default('UTC').describe('IANA time zone'),
  }),
  payload: jsonObject.default({}),
  overlapPolicy: z.enum(['all', 'skip', 'latest']).default('all'),
  maxConcurrency: int(LIMITS.maxConcurrency).nullable().optional(),
  maxEventAgeSeconds: int(LIMITS.maxEventAgeSeconds).nullable().optional(),
});

export const scheduleSchema = z.object({
  id: z.string(),
  queueId: z.string(),
  externalId: z.string(),
  name: z.string(),
  schedule: z.object({ type: z.literal('cron'), expression: z.string(), timezone: z.string() }),
  payload: jsonObject,
  overlapPolicy: z.enum(['all', 'skip', 'latest']),
  maxConcurrency: z.number().int().nullable(),
  maxEventAgeSeconds: z.number().int().nullable(),
  sync: z.object({
    status: z.enum(['pending', 'synced', 'error']),
    revision: z.number().int(),
    syncedRevision: z.number().int().nullable(),
    lastError: z.string().nullable(),
  }),
  nextFireAt: timestamp.nullable(),
  lastFiredAt: timestamp.nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const scheduleParams = z.object({ scheduleId: z.string() });
export const scheduleListQuery = z.object({ queueId: z.string().optional() });

export const deletedSchema = z.object({ id: z.string(), deleted: z.literal(true) });
