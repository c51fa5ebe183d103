import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { queueRecord } from './records.js';
import { createQueueBody, deletedSchema, queueParams, queueSchema, queueStatsSchema, updateQueueBody } from './schemas.js';
import type { EventsServices } from './services.js';

const tags = ['events'];
const security = [{ bearer: [] }];
const errors = { 400: envelopeErrorSchema, 401: envelopeErrorSchema, 404: envelopeErrorSchema, 409: envelopeErrorSchema };

/** Queues the owner's dashboard shows with their depth (each depth is a count over the queue's events). */
const DASHBOARD_QUEUES = 100;

export function registerQueueRoutes(app: ZodApp, ctx: AppContext, { queues, events }: EventsServices): void {
  // Authenticate before the body is parsed or validated: an unknown caller learns nothing.
  const onRequest = ctx.auth.guard(['project_key']);
  const projectOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request, 'project_key').projectId;

  app.post(
    '/v1/event-queues',
    {
      onRequest,
      schema: { tags, security, summary: 'Create an event queue', body: createQueueBody, response: { 201: envelopeSchema(queueSchema), ...errors } },
    },
    async (request, reply) => {
      const queue = await queues.create(projectOf(request), request.body);
      return reply.code(201).send(envelope(queueRecord(queue), 'Event queue created'));
    },
  );

  app.get(
    '/v1/event-queues',
    { onRequest, schema: { tags, security, summary: "List the project's event queues, newest first", response: { 200: envelopeSchema(z.array(queueSchema)), ...errors } } },
    async (request) => envelope((await queues.list(projectOf(request))).map(queueRecord)),
  );

  app.get(
    '/v1/event-queues/:queueId',
    { onRequest, schema: { tags, security, summary: 'Get an event queue', params: queueParams, response: { 200: envelopeSchema(queueSchema), ...errors } } },
    async (request) => envelope(queueRecord(await queues.get(projectOf(request), request.params.queueId))),
  );

  app.patch(
    '/v1/event-queues/:queueId',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Change how long an event queue keeps finished events (retentionSeconds, extension)',
        params: queueParams,
        body: updateQueueBody,
        response: { 200: envelopeSchema(queueSchema), ...errors },
      },
    },
    async (request) => envelope(queueRecord(await queues.setRetention(projectOf(request), request.params.queueId, request.body.retentionSeconds)), 'Event queue updated'),
  );

  app.delete(
    '/v1/event-queues/:queueId',
    {
      onRequest,
      schema: { tags, security, summary: 'Delete an event queue with its events and schedules', params: queueParams, response: { 200: envelopeSchema(deletedSchema), ...errors } },
    },
    async (request) => {
      await queues.delete(projectOf(request), request.params.queueId);
      return envelope({ id: request.params.queueId, deleted: true as const }, 'Event queue deleted');
    },
  );

  app.get(
    '/v1/projects/:projectId/event-queues',
    {
      onRequest: ctx.auth.guard(['identity']),
      schema: {
        tags,
        security,
        summary: `A project's event queues with their depth by state, for its owner (identity token, extension; the newest ${DASHBOARD_QUEUES})`,
        params: z.object({ projectId: z.uuid() }),
        response: { 200: envelopeSchema(z.array(queueSchema.extend({ depth: queueStatsSchema.shape.depth }))), ...errors },
      },
    },
    async (request) => {
      const { projectId } = request.params;
      await ctx.services.projects.requireOwned(principalOf(request, 'identity').userId, projectId);
      const list = (await queues.list(projectId)).slice(0, DASHBOARD_QUEUES);
      const withDepth = [];
      for (const queue of list) {
        const { leaseExpiries: _expiries, oldestReadyAgeSeconds: _age, ...depth } = await events.stats(projectId, queue.id);
        withDepth.push({ ...queueRecord(queue), depth });
      }
      return envelope(withDepth);
    },
  );
}
