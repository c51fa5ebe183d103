// Routes of runtimes: list, launch (idempotent), read, status moves, executions (listed, or a manual run) and the
// owner's flatten.
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { checkedIdempotencyKey } from '../../../platform/idempotency.js';
import { badRequest } from '../../../platform/http/errors.js';
import { IDEMPOTENCY_KEY } from '../../../platform/http/idempotent.js';
import { envelope } from '../../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../../platform/http/schemas.js';
import type { ZodApp } from '../../module.js';
import type { RuntimeService } from '../runtimes/runtimes.js';
import { executionsQuery, listQuery } from '../schemas/common.js';
import { createRuntimeBody, executionSchema, flattenResult, runtimeIdParams, runtimeSchema, statusBody } from '../schemas/runtimes.js';
import { BASE, COMMON, pageOf, userOf } from './common.js';

export function registerRuntimeRoutes(app: ZodApp, ctx: AppContext, parts: { runtimes: RuntimeService }): void {
  const { runtimes } = parts;
  const onRequest = ctx.auth.guard(['identity']);

  app.get(
    `${BASE}/runtimes`,
    { onRequest, schema: { ...COMMON, summary: 'Your runtimes, newest first', querystring: listQuery, response: { 200: envelopeSchema(z.array(runtimeSchema)), ...errors(400, 401) } } },
    async (request) => envelope(await runtimes.list(userOf(request), pageOf(request.query))),
  );
  app.post(
    `${BASE}/runtimes`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Launch a runtime (idempotent by idempotencyKey or the Idempotency-Key header)',
        description:
          '201 with the new runtime (provisioning); 200 with the runtime the same key made before; 409 when that key came with another definition. ' +
          '409 data_source_not_venue when the deployment trades on a live venue and the version does not read its prices (dataSources: ["venue"]); 409 market_data_not_current when its imported data lacks the candles a tick now reads. ' +
          'The key is the body\'s idempotencyKey or the Idempotency-Key header (8–200 printable ASCII); one is required, and both, when sent, must be equal.',
        body: createRuntimeBody,
        response: { 200: envelopeSchema(runtimeSchema), 201: envelopeSchema(runtimeSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      const header = checkedIdempotencyKey(request.headers[IDEMPOTENCY_KEY]);
      const key = request.body.idempotencyKey ?? header;
      if (key === null || (header !== null && header !== key)) {
        throw badRequest(key === null ? 'Send idempotencyKey in the body or an Idempotency-Key header' : 'The body\'s idempotencyKey and the Idempotency-Key header differ', { reason: 'invalid_idempotency_key' }, 'invalid_idempotency_key');
      }
      const { created, runtime } = await runtimes.create(userOf(request), { ...request.body, idempotencyKey: key });
      return reply.code(created ? 201 : 200).send(envelope(runtime));
    },
  );
  app.get(
    `${BASE}/runtimes/:runtimeId`,
    { onRequest, schema: { ...COMMON, summary: 'A runtime with its paper book', params: runtimeIdParams, response: { 200: envelopeSchema(runtimeSchema), ...errors(400, 401, 404) } } },
    async (request) => envelope(await runtimes.get(userOf(request), request.params.runtimeId)),
  );
  app.patch(
    `${BASE}/runtimes/:runtimeId/status`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Pause, resume or stop a runtime',
        description: '409 invalid_status_transition for a move the lifecycle does not allow (stop needs a paused runtime; stopped is terminal).',
        params: runtimeIdParams,
        body: statusBody,
        response: { 200: envelopeSchema(runtimeSchema), ...errors(400, 401, 404, 409) },
      },
    },
    async (request) => envelope(await runtimes.setStatus(userOf(request), request.params.runtimeId, request.body.status)),
  );
  app.get(
    `${BASE}/runtimes/:runtimeId/executions`,
    {
      onRequest,
      schema: { ...COMMON, summary: "A runtime's executions, newest first", params: runtimeIdParams, querystring: executionsQuery, response: { 200: envelopeSchema(z.array(executionSchema)), ...errors(400, 401, 404) } },
    },
    async (request) => envelope(await runtimes.executions(userOf(request), request.params.runtimeId, request.query.limit, request.query.before ?? null)),
  );
  app.post(
    `${BASE}/runtimes/:runtimeId/executions`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Run an active runtime now (manual trigger)',
        description: '503 execution_failed when the run failed (the feed or the venue did not answer); the failure is recorded on its execution.',
        params: runtimeIdParams,
        response: { 201: envelopeSchema(executionSchema), ...errors(400, 401, 404, 409, 503) },
      },
    },
    async (request, reply) => reply.code(201).send(envelope(await runtimes.runNow(userOf(request), request.params.runtimeId))),
  );
  app.post(
    `${BASE}/runtimes/:runtimeId/flatten`,
    {
      onRequest,
      schema: {
        ...COMMON,
        summary: 'Close every position of the runtime now (extension)',
        description:
          "One market order per position, largest first, each an execution with triggerType flatten; risk limits never block them and they are not charged. Runs for an active, paused or needs_review runtime and moves none of those statuses. 409 runtime_not_flattenable in another status; an account kill switch of `halt` records them halted (switch to reduce_only to close). 503 execution_failed when the venue or the feed did not answer.",
        params: runtimeIdParams,
        response: { 200: envelopeSchema(flattenResult), ...errors(400, 401, 404, 409, 503) },
      },
    },
    async (request) => envelope(await runtimes.flatten(userOf(request), request.params.runtimeId)),
  );
}
