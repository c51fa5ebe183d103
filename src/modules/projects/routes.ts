import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';
import {
  apiKeyParams,
  apiKeySchema,
  createApiKeyBody,
  createdApiKeySchema,
  createMerchantBody,
  createProjectBody,
  merchantParams,
  merchantSchema,
  projectIdParams,
  projectSchema,
  updateMerchantBody,
  updateProjectBody,
} from './schemas.js';
import { ProjectsService } from './service.js';
import { projectAdminCommands } from './admin.js';

declare module '../../context.js' {
  interface Services {
    projects: ProjectsService;
  }
}

export async function projectsModule(ctx: AppContext): Promise<Module> {
  const service = new ProjectsService(ctx);
  ctx.services.projects = service;
  ctx.auth.register('project_key', service.resolveKey);
  // Key lookups are cached per node once this node hears the other nodes' key changes (key-cache.ts).
  const stopKeyCache = await service.keyCache.start(ctx.database);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];

  return {
    name: 'projects',
    adminCommands: projectAdminCommands(service),
    close: stopKeyCache,
    routes: {
      api: (app) => {
        app.get(
          '/v1/projects',
          { onRequest: signedIn, schema: { tags: ['projects'], summary: "List the caller's projects", security, response: { 200: envelopeSchema(z.array(projectSchema)) } } },
          async (request) => envelope(await service.list(principalOf(request, 'identity').userId)),
        );
        app.post(
          '/v1/projects',
          {
            onRequest: signedIn,
            schema: { tags: ['projects'], summary: 'Create a project and its first API key', security, body: createProjectBody, response: { 201: envelopeSchema(z.object({ project: projectSchema, apiKey: createdApiKeySchema })) } },
          },
          async (request, reply) => reply.code(201).send(envelope(await service.create(principalOf(request, 'identity').userId, request.body.name))),
        );
        app.patch(
          '/v1/projects/:projectId',
          {
            onRequest: signedIn,
            schema: {
              tags: ['projects'],
              summary: "Change a project (owner only, extension): the event queue that receives its payment-intent events",
              description:
                'intentEventsQueueId: one of this project\'s event queues (404 queue_not_found otherwise), or null for none; omitted: unchanged. ' +
                'Every move of the project\'s intents to settled, failed or expired then publishes one payment_intent.* event into it (docs/intents.md#intent-events). ' +
                '404 when the project is not yours.',
              security,
              params: projectIdParams,
              body: updateProjectBody,
              response: { 200: envelopeSchema(projectSchema), ...envelopeErrors(400, 401, 404) },
            },
          },
          async (request) =>
            envelope(await service.setIntentEventsQueue(principalOf(request, 'identity').userId, request.params.projectId, request.body.intentEventsQueueId)),
        );
        app.post(
          '/v1/projects/:projectId/api-keys',
          {
            onRequest: signedIn,
            schema: { tags: ['projects'], summary: 'Create a project API key (secret shown once)', security, params: projectIdParams, body: createApiKeyBody, response: { 201: envelopeSchema(createdApiKeySchema) } },
          },
          async (request, reply) =>
            reply.code(201).send(envelope(await service.createApiKey(principalOf(request, 'identity').userId, request.params.projectId, request.body.name))),
        );
        app.delete(
          '/v1/projects/:projectId/api-keys/:keyId',
          {
            onRequest: signedIn,
            schema: {
              tags: ['projects'],
              summary: 'Revoke a project API key (extension): requests with it are refused (401) from now on',
              description: 'Idempotent: revoking a revoked key answers it again. 404 when the project or the key is not yours.',
              security,
              params: apiKeyParams,
              response: { 200: envelopeSchema(apiKeySchema), ...envelopeErrors(400, 401, 404) },
            },
          },
          async (request) => envelope(await service.revokeApiKey(principalOf(request, 'identity').userId, request.params.projectId, request.params.keyId)),
        );
        app.post(
          '/v1/projects/:projectId/merchants',
          {
            onRequest: signedIn,
            schema: {
              tags: ['projects'],
              summary: 'Create a merchant (payTo is checksum-normalized)',
              description: 'Names are unique within the project: 409 with data.reason merchant_name_taken (and data.merchantId, the holder).',
              security,
              params: projectIdParams,
              body: createMerchantBody,
              response: { 201: envelopeSchema(merchantSchema), ...envelopeErrors(400, 401, 404, 409) },
            },
          },
          async (request, reply) =>
            reply.code(201).send(envelope(await service.createMerchant(principalOf(request, 'identity').userId, request.params.projectId, request.body))),
        );
        app.patch(
          '/v1/projects/:projectId/merchants/:merchantId',
          {
            onRequest: signedIn,
            schema: {
              tags: ['projects'],
              summary: 'Rename, disable or re-enable a merchant (owner only, extension)',
              description:
                'name (1-200, unique within the project: 409 merchant_name_taken), enabled (false: new intents for it and payments of its open intents answer 403 merchant_disabled). ' +
                'An omitted field is unchanged. 404 when the project or the merchant is not yours (data.reason merchant_not_found for a merchant outside the project).',
              security,
              params: merchantParams,
              body: updateMerchantBody,
              response: { 200: envelopeSchema(merchantSchema), ...envelopeErrors(400, 401, 404, 409) },
            },
          },
          async (request) =>
            envelope(await service.updateMerchant(principalOf(request, 'identity').userId, request.params.projectId, request.params.merchantId, request.body)),
        );
      },
    },
  };
}
