import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { queueRecord } from './records.js';
import { createQueueBody, deletedSchema, queueParams, queueSchema } from './schemas.js';
import type { EventsServices } from './services.js';

const tags = ['events'];
const security = [{ bearer: [] }];
const errors = { 400: envelopeErrorSchema, 401: envelopeErrorSchema, 404: envelopeErrorSchema, 409: envelopeErrorSchema };

export function registerQueueRoutes(app: ZodApp, ctx: AppContext, { queues }: EventsServices): void {
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
}
