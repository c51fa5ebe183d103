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
  merchantSchema,
  projectIdParams,
  projectSchema,
} from './schemas.js';
import { ProjectsService } from './service.js';
import { projectAdminCommands } from './admin.js';

declare module '../../context.js' {
  interface Services {
    projects: ProjectsService;
  }
}

export function projectsModule(ctx: AppContext): Module {
  const service = new ProjectsService(ctx);
  ctx.services.projects = service;
  ctx.auth.register('project_key', service.resolveKey);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];

  return {
    name: 'projects',
    adminCommands: projectAdminCommands(service),
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
            schema: { tags: ['projects'], summary: 'Create a merchant (payTo is checksum-normalized)', security, params: projectIdParams, body: createMerchantBody, response: { 201: envelopeSchema(merchantSchema) } },
          },
          async (request, reply) =>
            reply.code(201).send(envelope(await service.createMerchant(principalOf(request, 'identity').userId, request.params.projectId, request.body))),
        );
      },
    },
  };
}
