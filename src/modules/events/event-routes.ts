import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { isoTime } from '../../platform/iso-time.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { eventRecord } from './records.js';
import type { Claimed } from './event-service.js';
import { LIMITS } from './limits.js';
import {
  ackAndClaimBody,
  ackAndClaimSchema,
  ackBatchBody,
  ackBody,
  ackedSchema,
  claimBody,
  claimedSchema,
  deadEventsQuery,
  eventParams,
  eventSchema,
  heartbeatBody,
  heartbeatSchema,
  leaseResultSchema,
  nackBatchBody,
  nackBody,
  publishBatchBody,
  publishBody,
  publishedSchema,
  queueParams,
  queueStatsSchema,
  redriveBody,
  redrivenSchema,
} from './schemas.js';
import type { EventsServices } from './services.js';

const tags = ['events'];
const security = [{ bearer: [] }];
const errors = {
  400: envelopeErrorSchema,
  401: envelopeErrorSchema,
  404: envelopeErrorSchema,
  409: envelopeErrorSchema,
  413: envelopeErrorSchema,
};

/** Aborts when the client goes away before its response was written (a long poll then stops waiting). */
function disconnectSignal(reply: FastifyReply): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) controller.abort();
  };
  reply.raw.once('close', onClose);
  return { signal: controller.signal, dispose: () => reply.raw.off('close', onClose) };
}

export function registerEventRoutes(app: ZodApp, ctx: AppContext, { events, batches }: EventsServices): void {
  const onRequest = ctx.auth.guard(['project_key']);
  const projectOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request, 'project_key').projectId;
  const record = (row: Parameters<typeof eventRecord>[0]) => eventRecord(row, events.now());
  const claimedRecord = (claimed: Claimed) => ({ event: record(claimed.event), leaseToken: claimed.leaseToken, leaseExpiresAt: isoTime(claimed.leaseExpiresAt) });
  /** An ack's or nack's `next`: the claim the claim route makes, after the lease was settled (extension). */
  const claimNext = async (request: Parameters<typeof principalOf>[0], reply: FastifyReply, next: { queueId: string; leaseSeconds?: number; waitSeconds: number }) => {
    const disconnect = disconnectSignal(reply);
    try {
      const claimed = await events.claim(projectOf(request), next.queueId, { leaseSeconds: next.leaseSeconds, waitSeconds: next.waitSeconds, signal: disconnect.signal });
      return claimed ? claimedRecord(claimed) : null;
    } finally {
      disconnect.dispose();
    }
  };

  app.post(
    '/v1/event-queues/:queueId/events',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Publish an event (201; 200 with the existing event for a used deduplicationKey)',
        params: queueParams,
        body: publishBody,
        response: { 200: envelopeSchema(eventSchema), 201: envelopeSchema(eventSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { event, created } = await events.publish(projectOf(request), request.params.queueId, request.body);
      return created
        ? reply.code(201).send(envelope(record(event), 'Event published'))
        : reply.code(200).send(envelope(record(event), 'Duplicate deduplicationKey: existing event returned'));
    },
  );

  app.post(
    '/v1/event-queues/:queueId/events/batch',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Publish up to 1000 events in order (extension); each answer is the event id and whether it was created (false: its deduplicationKey was used)',
        params: queueParams,
        body: publishBatchBody,
        response: { 200: envelopeSchema(z.array(publishedSchema)), ...errors },
      },
    },
    async (request) => {
      const published = await batches.publishMany(projectOf(request), request.params.queueId, request.body.events);
      const created = published.filter((item) => item.created).length;
      return envelope(published, `${created} published, ${published.length - created} already present`);
    },
  );

  app.post(
    '/v1/event-queues/:queueId/claim',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary:
          'Claim the oldest available event (long poll up to waitSeconds); data is null when none. With maxEvents (extension): up to that many, data an array (empty when none), the events sharing one leaseToken',
        params: queueParams,
        body: claimBody,
        response: { 200: envelopeSchema(claimedSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { maxEvents, ...options } = request.body ?? {};
      const disconnect = disconnectSignal(reply);
      try {
        const claimOptions = { ...options, signal: disconnect.signal };
        if (maxEvents !== undefined) {
          return envelope((await batches.claimMany(projectOf(request), request.params.queueId, maxEvents, claimOptions)).map(claimedRecord));
        }
        const claimed = await events.claim(projectOf(request), request.params.queueId, claimOptions);
        return envelope(claimed ? claimedRecord(claimed) : null);
      } finally {
        disconnect.dispose();
      }
    },
  );

  app.post(
    '/v1/events/:eventId/heartbeat',
    {
      onRequest,
      schema: { tags, security, summary: 'Extend the lease to now + leaseSeconds', params: eventParams, body: heartbeatBody, response: { 200: envelopeSchema(heartbeatSchema), ...errors } },
    },
    async (request) => {
      const event = await events.heartbeat(projectOf(request), request.params.eventId, request.body.leaseToken, request.body.leaseSeconds);
      return envelope({ event: record(event), leaseExpiresAt: event.leaseExpiresAt!.toISOString() });
    },
  );

  app.post(
    '/v1/events/:eventId/ack',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Acknowledge (complete) a leased event; with `next` (extension), claim the next event in the same request (data.next)',
        params: eventParams,
        body: ackBody,
        response: { 200: envelopeSchema(ackedSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { eventId } = request.params;
      const { leaseToken, next } = request.body;
      if (!next) return envelope(record(await events.ack(projectOf(request), eventId, leaseToken)));
      const disconnect = disconnectSignal(reply);
      try {
        const done = await events.ackAndClaim(projectOf(request), eventId, leaseToken, { ...next, signal: disconnect.signal });
        return envelope({ ...record(done.acked), next: done.next ? claimedRecord(done.next) : null });
      } finally {
        disconnect.dispose();
      }
    },
  );

  app.post(
    '/v1/events/:eventId/nack',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Report a failed delivery: retried after retryDelaySeconds (default backoff), dead after maxAttempts; with `next` (extension), claim the next event in the same request',
        params: eventParams,
        body: nackBody,
        response: { 200: envelopeSchema(ackedSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { leaseToken, next, ...options } = request.body;
      const nacked = record(await events.nack(projectOf(request), request.params.eventId, leaseToken, options));
      return envelope(next ? { ...nacked, next: await claimNext(request, reply, next) } : nacked);
    },
  );

  app.post(
    '/v1/events/ack',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Acknowledge up to 1000 leased events (extension); each lease is answered on its own, in order',
        body: ackBatchBody,
        response: { 200: envelopeSchema(z.array(leaseResultSchema)), ...errors },
      },
    },
    async (request) => envelope(await batches.ackMany(projectOf(request), request.body.leases)),
  );

  app.post(
    '/v1/event-queues/:queueId/ack-and-claim',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Acknowledge up to 1000 leased events, then claim up to maxEvents of this queue, in one request (extension)',
        description:
          "The batched consumer's loop in one round trip: `acked` is what POST /v1/events/ack answers for `leases`, `claimed` what a claim with `maxEvents` answers (long polling up to `waitSeconds`). The acks are made first; an unknown queue answers 404 after them.",
        params: queueParams,
        body: ackAndClaimBody,
        response: { 200: envelopeSchema(ackAndClaimSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { leases, maxEvents, leaseSeconds, waitSeconds } = request.body;
      const disconnect = disconnectSignal(reply);
      try {
        const { acked, claimed } = await batches.ackAndClaim(projectOf(request), request.params.queueId, leases, maxEvents, { leaseSeconds, waitSeconds, signal: disconnect.signal });
        return envelope({ acked, claimed: claimed.map(claimedRecord) });
      } finally {
        disconnect.dispose();
      }
    },
  );

  app.post(
    '/v1/events/nack',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Report failed deliveries of up to 1000 leased events (extension); each lease is answered on its own, in order',
        body: nackBatchBody,
        response: { 200: envelopeSchema(z.array(leaseResultSchema)), ...errors },
      },
    },
    async (request) => envelope(await batches.nackMany(projectOf(request), request.body.leases)),
  );

  app.get(
    '/v1/events/:eventId',
    { onRequest, schema: { tags, security, summary: 'Get an event', params: eventParams, response: { 200: envelopeSchema(eventSchema), ...errors } } },
    async (request) => envelope(record(await events.get(projectOf(request), request.params.eventId))),
  );

  app.get(
    '/v1/event-queues/:queueId/dead-events',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'List dead events of a queue, newest first (page with before=<last id>)',
        params: queueParams,
        querystring: deadEventsQuery,
        response: { 200: envelopeSchema(z.array(eventSchema)), ...errors },
      },
    },
    async (request) => {
      const projectId = projectOf(request);
      const { limit, before } = request.query;
      const rows = await events.listDead(projectId, request.params.queueId, limit, before ?? null);
      return envelope(rows.map(record));
    },
  );

  app.post(
    '/v1/event-queues/:queueId/dead-events/redrive',
    {
      onRequest,
      config: { audit: { action: 'queue.redrive', target: ({ params }) => params.queueId } },
      schema: {
        tags,
        security,
        summary: `Put dead events back to available with fresh attempts (extension): {eventIds} or {all: true} (up to ${LIMITS.redriveAll} a call)`,
        params: queueParams,
        body: redriveBody,
        response: { 200: envelopeSchema(redrivenSchema), ...errors },
      },
    },
    async (request) => {
      const body = request.body;
      const target = 'all' in body ? { all: true as const, limit: LIMITS.redriveAll } : { eventIds: body.eventIds };
      const result = await events.redrive(projectOf(request), request.params.queueId, target);
      return envelope({ redriven: result.eventIds.length, ...result }, `${result.eventIds.length} dead events redriven`);
    },
  );

  app.get(
    '/v1/event-queues/:queueId/stats',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Depth by state, age of the oldest ready event and lease expiries of a queue (extension)',
        params: queueParams,
        response: { 200: envelopeSchema(queueStatsSchema), ...errors },
      },
    },
    async (request) => {
      const { leaseExpiries, oldestReadyAgeSeconds, ...depth } = await events.stats(projectOf(request), request.params.queueId);
      return envelope({
        queueId: request.params.queueId,
        depth,
        oldestReadyAgeSeconds,
        leaseExpiries,
        measuredAt: events.now().toISOString(),
      });
    },
  );
}
