import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';
import {
  apiKeyParams,
  apiKeySchema,
  auditEntrySchema,
  auditQuery,
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
import { projectApiKeys } from './tables.js';

declare module '../../context.js' {
  interface Services {
    projects: ProjectsService;
  }
}

/** The project a create made (its answer's data.project.id): what its audit row names. */
const projectIdOf = (answer: unknown) => (answer as { data?: { project?: { id?: string } } } | null)?.data?.project?.id;

export async function projectsModule(ctx: AppContext): Promise<Module> {
  const service = new ProjectsService(ctx);
  ctx.services.projects = service;
  ctx.auth.register('project_key', service.resolveKey);
  ctx.keyRotation.hashedColumn({ name: 'project_api_keys.secret_hash', table: projectApiKeys, key: [projectApiKeys.id], column: projectApiKeys.secretHash });
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
          { onRequest: signedIn, schema: { tags: ['projects'], summary: "List the caller's projects", security, response: { 200: envelopeSchema(z.array(projectSchema)), ...envelopeErrors(401) } } },
          async (request) => envelope(await service.list(principalOf(request, 'identity').userId)),
        );
        app.post(
          '/v1/projects',
          {
            onRequest: signedIn,
            config: { audit: { action: 'project.create', target: ({ answer }) => projectIdOf(answer), project: ({ answer }) => projectIdOf(answer) } },
            schema: { tags: ['projects'], summary: 'Create a project and its first API key', security, body: createProjectBody, response: { 201: envelopeSchema(z.object({ project: projectSchema, apiKey: createdApiKeySchema })), ...envelopeErrors(400, 401) } },
          },
          async (request, reply) => reply.code(201).send(envelope(await service.create(principalOf(request, 'identity').userId, request.body.name))),
        );
        app.patch(
          '/v1/projects/:projectId',
          {
            onRequest: signedIn,
            config: { audit: { action: 'project.update' } },
            schema: {
              tags: ['projects'],
              summary: "Change a project (owner only, extension): the event queue that receives its payment-intent events, the wallet that pays its refunds",
              description:
                'intentEventsQueueId: one of this project\'s event queues (404 queue_not_found otherwise), or null for none; omitted: unchanged. ' +
                'Every move of the project\'s intents to settled, failed or expired then publishes one payment_intent.* event into it (docs/intents.md#intent-events). ' +
                'refundWalletId: the Tollgate wallet that pays refunds, with refundWalletCredential, a wallet credential of it (404 refund_wallet_not_found when it is not one, 409 wallet_not_active), or null for none. ' +
                '404 when the project is not yours.',
              security,
              params: projectIdParams,
              body: updateProjectBody,
              response: { 200: envelopeSchema(projectSchema), ...envelopeErrors(400, 401, 404, 409) },
            },
          },
          async (request) => envelope(await service.update(principalOf(request, 'identity').userId, request.params.projectId, request.body)),
        );
        app.post(
          '/v1/projects/:projectId/api-keys',
          {
            onRequest: signedIn,
            config: { audit: { action: 'project-key.create' } },
            schema: { tags: ['projects'], summary: 'Create a project API key (secret shown once)', security, params: projectIdParams, body: createApiKeyBody, response: { 201: envelopeSchema(createdApiKeySchema), ...envelopeErrors(400, 401, 404) } },
          },
          async (request, reply) =>
            reply.code(201).send(envelope(await service.createApiKey(principalOf(request, 'identity').userId, request.params.projectId, request.body.name))),
        );
        app.delete(
          '/v1/projects/:projectId/api-keys/:keyId',
          {
            onRequest: signedIn,
            config: { audit: { action: 'project-key.revoke' } },
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
            config: { audit: { action: 'merchant.create' } },
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
        app.get(
          '/v1/projects/:projectId/audit',
          {
            onRequest: signedIn,
            schema: {
              tags: ['projects'],
              summary: "The project's audit trail, newest first (owner only, extension)",
              description:
                'One entry per change of the project, its API keys and merchants: the owner\'s own through this API and the operator\'s switches (project, key and merchant disable/enable/revoke), ' +
                'each with when, who (kind and id; the operator appears as `operator`), what, the target, the request id (the `x-request-id` of the call) and the outcome. ' +
                'Entries are append-only. Paging: `limit` (1-200, default 50) and `before` (the last `seq` seen). 404 when the project is not yours.',
              security,
              params: projectIdParams,
              querystring: auditQuery,
              response: { 200: envelopeSchema(z.array(auditEntrySchema)), ...envelopeErrors(400, 401, 404) },
            },
          },
          async (request) => envelope(await service.auditTrail(principalOf(request, 'identity').userId, request.params.projectId, request.query)),
        );
        app.patch(
          '/v1/projects/:projectId/merchants/:merchantId',
          {
            onRequest: signedIn,
            config: { audit: { action: 'merchant.update' } },
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
