import { z } from 'zod';
import { LIMITS } from './limits.js';

// Request and response schemas of the Events API: the contract /openapi.json is generated from.

const int = (bounds: { min: number; max: number }) => z.number().int().min(bounds.min).max(bounds.max);
const timestamp = z.string().describe('ISO 8601');

export const jsonObject = z.record(z.string(), z.unknown()).describe(`JSON object, at most ${LIMITS.payloadBytes} bytes serialized`);

// ---- queues

const retention = int(LIMITS.retentionSeconds).describe(
  'how long finished events (acked, dead, expired, superseded) are kept after they finished, then purged (extension)',
);

export const createQueueBody = z.object({
  name: z.string().min(LIMITS.queueName.min).max(LIMITS.queueName.max),
  defaultLeaseSeconds: int(LIMITS.leaseSeconds).default(LIMITS.defaultLeaseSeconds),
  maxAttempts: int(LIMITS.maxAttempts).default(LIMITS.defaultMaxAttempts),
  retentionSeconds: retention.default(LIMITS.defaultRetentionSeconds),
});

export const updateQueueBody = z.object({ retentionSeconds: retention }).strict();

export const queueSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['active']),
  defaultLeaseSeconds: z.number().int(),
  maxAttempts: z.number().int(),
  retentionSeconds: z.number().int().describe('finished events are purged this long after they finished (extension)'),
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

export const publishBatchBody = z.object({
  events: z.array(publishBody).min(LIMITS.batchItems.min).max(LIMITS.batchItems.max),
});

export const publishedSchema = z.object({ id: z.string(), created: z.boolean().describe('false: the event already holding the deduplicationKey') });

// Every field is optional, so an empty body (or none at all: Fastify then gives null) is a valid claim.
export const claimBody = z
  .object({
    leaseSeconds: int(LIMITS.leaseSeconds).optional().describe("default: the queue's defaultLeaseSeconds"),
    waitSeconds: int(LIMITS.waitSeconds).default(0),
    maxEvents: int(LIMITS.claimMaxEvents).optional().describe('batch claim (extension): data is then an array of claimed events'),
  })
  .nullish();

const claimedEvent = z.object({ event: eventSchema, leaseToken: z.string(), leaseExpiresAt: timestamp });
export const claimedSchema = z.union([claimedEvent.nullable(), z.array(claimedEvent)]);

const leaseToken = z.string().min(1).max(200);

export const heartbeatBody = z.object({ leaseToken, leaseSeconds: int(LIMITS.leaseSeconds).optional() });
export const heartbeatSchema = z.object({ event: eventSchema, leaseExpiresAt: timestamp });
/** Ack or nack, then claim the next event in the same request (extension): one round trip per event, not two. */
const nextClaim = z
  .object({
    queueId: z.string().max(100),
    leaseSeconds: int(LIMITS.leaseSeconds).optional().describe("default: the queue's defaultLeaseSeconds"),
    waitSeconds: int(LIMITS.waitSeconds).default(0),
  })
  .optional()
  .describe("claim the next event of this queue in the same request (extension): the answer's data.next is it, as the claim answers it, or null");
export const ackBody = z.object({ leaseToken, next: nextClaim });
export const nackBody = z.object({
  leaseToken,
  error: z.string().max(LIMITS.errorLength).optional(),
  retryDelaySeconds: int(LIMITS.retryDelaySeconds).optional(),
  next: nextClaim,
});
/** The acked or nacked event; with `next` asked, the event claimed after it. */
export const ackedSchema = eventSchema.extend({ next: claimedEvent.nullable().optional().describe('present when the request asked for next: the claimed event, or null when none was available') });

const batchOf = <T extends z.ZodType>(item: T) => z.array(item).min(LIMITS.batchItems.min).max(LIMITS.batchItems.max);

export const ackBatchBody = z.object({ leases: batchOf(z.object({ eventId: z.string().max(100), leaseToken })) });
export const nackBatchBody = z.object({ leases: batchOf(nackBody.extend({ eventId: z.string().max(100) })) });
/** Ack a batch, then claim the next batch of the path's queue, in one request (extension): the batched consumer's loop. */
export const ackAndClaimBody = ackBatchBody.extend({
  maxEvents: int(LIMITS.claimMaxEvents).describe("how many events to claim after the acks (1-100)"),
  leaseSeconds: int(LIMITS.leaseSeconds).optional().describe("default: the queue's defaultLeaseSeconds"),
  waitSeconds: int(LIMITS.waitSeconds).default(0),
});

export const leaseResultSchema = z.union([
  z.object({ eventId: z.string(), ok: z.literal(true), status: eventStatusSchema, availableAt: timestamp.nullable().describe('when it is offered again (nack)') }),
  z.object({ eventId: z.string(), ok: z.literal(false), error: z.object({ code: z.number().int(), reason: z.string(), message: z.string() }) }),
]);

export const ackAndClaimSchema = z.object({
  acked: z.array(leaseResultSchema).describe('each lease answered on its own, in order, as POST /v1/events/ack answers'),
  claimed: z.array(claimedEvent).describe('the next events of the queue, as a claim with maxEvents answers (empty when none)'),
});

export const redriveBody = z.union([
  z.object({ eventIds: z.array(z.string().max(100)).min(LIMITS.batchItems.min).max(LIMITS.batchItems.max) }).strict(),
  z.object({ all: z.literal(true) }).strict(),
]);

export const redrivenSchema = z.object({
  redriven: z.number().int(),
  eventIds: z.array(z.string()),
  notRedriven: z.array(z.object({ eventId: z.string(), status: eventStatusSchema.nullable().describe('null: no such event in the queue') })),
  more: z.boolean().describe(`all: stopped after ${LIMITS.redriveAll} while dead events remain`),
});

export const queueStatsSchema = z.object({
  queueId: z.string(),
  depth: z.object({
    ready: z.number().int().describe('available now'),
    delayed: z.number().int().describe('available later (delaySeconds or nack backoff)'),
    leased: z.number().int(),
    acked: z.number().int(),
    dead: z.number().int(),
    expired: z.number().int(),
    superseded: z.number().int(),
  }),
  oldestReadyAgeSeconds: z.number().nullable().describe('how long the oldest ready event has waited; null when none'),
  leaseExpiries: z.number().int().describe('leases of this queue that ran out without ack or nack, since it was created'),
  measuredAt: timestamp,
});

export const deadEventsQuery = z.object({
  limit: z.coerce.number().int().min(LIMITS.listLimit.min).max(LIMITS.listLimit.max).default(LIMITS.listLimit.default),
  before: z.uuid().optional().describe('id of the last event of the previous page'),
});

// ---- schedules

const backfillSchema = z
  .enum(['none', 'latest', 'all'])
  .describe('ticks missed while no scheduler ran: none, the latest one (default), or all (the 1000 most recent)');

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
  backfill: backfillSchema.default('latest'),
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
  backfill: backfillSchema,
  paused: z.boolean(),
  pausedAt: timestamp.nullable(),
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
