import path from 'node:path';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';
import { createAgentBody, createAgentResult, listedAgentSchema } from './schemas.js';
import { AgentsService } from './service.js';
import { AgentDeployer, agentLoops } from './deployer.js';
import { LocalRuntimeProvider } from './local-provider.js';
import type { RuntimeProvider } from './runtime-provider.js';

const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, envelopeErrorSchema]));

export interface AgentsModuleOptions {
  /** Where runtimes run; default: processes on this machine, volumes under <data dir>/agents. */
  provider?: (ctx: AppContext) => RuntimeProvider;
}

/** Hosted agents (the spec's Agents section): list and buy; the worker deploys. Needs the credits module. */
export const createAgentsModule = (options: AgentsModuleOptions = {}) => (ctx: AppContext): Module => {
  const service = new AgentsService(ctx);
  const provider = options.provider?.(ctx) ?? new LocalRuntimeProvider(path.join(ctx.config.dataDir, 'agents'), ctx.log.child({ component: 'agent-runtimes' }));
  const deployer = new AgentDeployer(ctx, service.store, provider);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];
  const tags = ['agents'];

  return {
    name: 'agents',
    loops: agentLoops(deployer),
    close: () => provider.close(),
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
};

export const agentsModule = createAgentsModule();
