import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { scheduleRecord } from './records.js';
import { deletedSchema, scheduleBody, scheduleListQuery, scheduleParams, scheduleSchema } from './schemas.js';
import type { EventsServices } from './services.js';

const tags = ['events'];
const security = [{ bearer: [] }];
const errors = { 400: envelopeErrorSchema, 401: envelopeErrorSchema, 404: envelopeErrorSchema, 413: envelopeErrorSchema };

const MESSAGES = { created: 'Schedule created', updated: 'Schedule updated', unchanged: 'Schedule unchanged' } as const;

export function registerScheduleRoutes(app: ZodApp, ctx: AppContext, { schedules }: EventsServices): void {
  const onRequest = ctx.auth.guard(['project_key']);
  const projectOf = (request: Parameters<typeof principalOf>[0]) => principalOf(request, 'project_key').projectId;

  app.post(
    '/v1/schedules',
    {
      onRequest,
      schema: {
        tags,
        security,
        summary: 'Create or update (by externalId) a cron schedule; accepted with sync status pending',
        body: scheduleBody,
        response: { 200: envelopeSchema(scheduleSchema), 201: envelopeSchema(scheduleSchema), ...errors },
      },
    },
    async (request, reply) => {
      const { schedule, outcome } = await schedules.upsert(projectOf(request), request.body);
      return reply.code(outcome === 'created' ? 201 : 200).send(envelope(scheduleRecord(schedule), MESSAGES[outcome]));
    },
  );

  app.get(
    '/v1/schedules',
    {
      onRequest,
      schema: { tags, security, summary: "List the project's schedules, newest first", querystring: scheduleListQuery, response: { 200: envelopeSchema(z.array(scheduleSchema)), ...errors } },
    },
    async (request) => envelope((await schedules.list(projectOf(request), request.query.queueId ?? null)).map(scheduleRecord)),
  );

  app.get(
    '/v1/schedules/:scheduleId',
    { onRequest, schema: { tags, security, summary: 'Get a schedule', params: scheduleParams, response: { 200: envelopeSchema(scheduleSchema), ...errors } } },
    async (request) => envelope(scheduleRecord(await schedules.get(projectOf(request), request.params.scheduleId))),
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post(
      `/v1/schedules/:scheduleId/${action}`,
      {
        onRequest,
        schema: {
          tags,
          security,
          summary:
            action === 'pause'
              ? 'Pause a schedule (extension): no ticks fire until resumed; enqueued events stay'
              : 'Resume a paused schedule (extension): it fires from its first tick after now; ticks of the pause are not backfilled',
          params: scheduleParams,
          response: { 200: envelopeSchema(scheduleSchema), ...errors },
        },
      },
      async (request) => {
        const row = await schedules[action](projectOf(request), request.params.scheduleId);
        return envelope(scheduleRecord(row), action === 'pause' ? 'Schedule paused' : 'Schedule resumed');
      },
    );
  }

  app.delete(
    '/v1/schedules/:scheduleId',
    {
      onRequest,
      schema: { tags, security, summary: 'Delete a schedule (its enqueued events stay)', params: scheduleParams, response: { 200: envelopeSchema(deletedSchema), ...errors } },
    },
    async (request) => {
      await schedules.delete(projectOf(request), request.params.scheduleId);
      return envelope({ id: request.params.scheduleId, deleted: true as const }, 'Schedule deleted');
    },
  );
}
