import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';
import { createAgentBody, createAgentResult, listedAgentSchema } from './schemas.js';
import { AgentsService } from './service.js';

const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, envelopeErrorSchema]));

/** Hosted agents (the spec's Agents section): list and buy. Needs the credits module. */
export function agentsModule(ctx: AppContext): Module {
  const service = new AgentsService(ctx);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];
  const tags = ['agents'];

  return {
    name: 'agents',
    routes: {
      api: (app) => {
        app.get(
          '/agents',
          { onRequest: signedIn, schema: { tags, summary: "The signed-in user's agents, newest first, each with its runtimeInstance", security, response: { 200: envelopeSchema(z.array(listedAgentSchema)), ...errors(401) } } },
          async (request) => envelope(await service.list(principalOf(request, 'identity').userId)),
        );
        app.post(
          '/agents',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: 'Buy an agent: charges 1000 credit cents and queues a one-month runtime deployment',
              description: '402 (data.reason insufficient_balance, with the balance and the price) when the credits do not cover it; nothing is charged or created then.',
              security,
              body: createAgentBody,
              response: { 201: envelopeSchema(createAgentResult), ...errors(400, 401, 402) },
            },
          },
          async (request, reply) => reply.code(201).send(envelope(await service.create(principalOf(request, 'identity').userId, request.body))),
        );
      },
    },
  };
}
