import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { Module } from '../module.js';
import {
  agentIdParams,
  budgetBody,
  budgetSchema,
  CHAT_LIMITS,
  chatBody,
  chatHistory,
  chatResult,
  createAgentBody,
  createAgentResult,
  historyQuery,
  listedAgentSchema,
  providerEntrySchema,
  runtimeConfigSchema,
  setProviderBody,
  toolPaymentBody,
} from './schemas.js';
import { AgentOperations } from './operations.js';
import { AgentPayments } from './payments.js';
import { AgentSecrets } from './agent-secrets.js';
import { AgentsService } from './service.js';
import { AgentDeployer, agentLoops } from './deployer.js';
import { FlyRuntimeProvider } from './fly-provider.js';
import { LocalRuntimeProvider } from './local-provider.js';
import type { RuntimeProvider } from './runtime-provider.js';


export interface AgentsModuleOptions {
  /** Where runtimes run; default: processes on this machine, volumes under <data dir>/agents. */
  provider?: (ctx: AppContext) => RuntimeProvider;
}

/** Hosted agents (the spec's Agents section): list and buy; the worker deploys. Needs the credits module. */
export const createAgentsModule = (options: AgentsModuleOptions = {}) => (ctx: AppContext): Module => {
  const service = new AgentsService(ctx);
  const provider = options.provider?.(ctx) ?? configuredProvider(ctx);
  const secrets = new AgentSecrets(ctx.config);
  const deployer = new AgentDeployer(ctx, service.store, provider, secrets);
  const operations = new AgentOperations(ctx, service.store, secrets);
  const payments = new AgentPayments(ctx, service.store, secrets);
  const userOf = (request: FastifyRequest) => principalOf(request, 'identity').userId;
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
          async (request) => envelope(await service.list(userOf(request))),
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
          async (request, reply) => reply.code(201).send(envelope(await service.create(userOf(request), request.body))),
        );
        app.get(
          '/agents/:agentId/config',
          { onRequest: signedIn, schema: { tags, summary: "The agent runtime's configuration", security, params: agentIdParams, response: { 200: envelopeSchema(runtimeConfigSchema), ...errors(400, 401, 404, 409, 503) } } },
          async (request) => envelope(await operations.config(userOf(request), request.params.agentId)),
        );
        app.get(
          '/agents/:agentId/providers',
          { onRequest: signedIn, schema: { tags, summary: "The agent's model providers, keys masked", security, params: agentIdParams, response: { 200: envelopeSchema(z.array(providerEntrySchema)), ...errors(400, 401, 404) } } },
          async (request) => envelope(await operations.providers(userOf(request), request.params.agentId)),
        );
        app.put(
          '/agents/:agentId/providers',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: "Set the agent's key for a model provider (stored sealed; the one set last answers chats)",
              security,
              params: agentIdParams,
              body: setProviderBody,
              response: { 200: envelopeSchema(providerEntrySchema), ...errors(400, 401, 404) },
            },
          },
          async (request) => envelope(await operations.setProvider(userOf(request), request.params.agentId, request.body.provider, request.body.apiKey)),
        );
        app.post(
          '/agents/:agentId/chat',
          {
            onRequest: signedIn,
            bodyLimit: CHAT_LIMITS.bodyBytes,
            schema: {
              tags,
              summary: 'Chat with the agent: the new messages of a session; the runtime keeps the history and calls the model provider',
              security,
              params: agentIdParams,
              body: chatBody,
              response: { 200: envelopeSchema(chatResult), ...errors(400, 401, 404, 409, 413, 429, 502, 503) },
            },
          },
          async (request) => envelope(await operations.chat(userOf(request), request.params.agentId, request.body)),
        );
        app.get(
          '/agents/:agentId/budget',
          { onRequest: signedIn, schema: { tags, summary: "The agent's daily model-token budget and today's use (extension)", security, params: agentIdParams, response: { 200: envelopeSchema(budgetSchema), ...errors(400, 401, 404, 409, 503) } } },
          async (request) => envelope(await operations.budget(userOf(request), request.params.agentId)),
        );
        app.put(
          '/agents/:agentId/budget',
          {
            onRequest: signedIn,
            schema: { tags, summary: "Set the agent's daily model-token budget (extension)", security, params: agentIdParams, body: budgetBody, response: { 200: envelopeSchema(budgetSchema), ...errors(400, 401, 404, 409, 503) } },
          },
          async (request) => envelope(await operations.setBudget(userOf(request), request.params.agentId, request.body)),
        );
        // The runtime's own route (runtime_b's tool), authenticated by its token, not a user's: kept out of the
        // public API description (docs/agents.md documents it).
        app.post(
          '/agents/:agentId/runtime/pay-and-call',
          { schema: { hide: true, params: agentIdParams, body: toolPaymentBody } },
          async (request) => {
            const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
            return envelope(await payments.pay(request.params.agentId, token, request.body));
          },
        );
        app.get(
          '/agents/:agentId/chat/history',
          {
            onRequest: signedIn,
            schema: { tags, summary: "A session's chat history", security, params: agentIdParams, querystring: historyQuery, response: { 200: envelopeSchema(chatHistory), ...errors(400, 401, 404, 409, 503) } },
          },
          async (request) => envelope(await operations.history(userOf(request), request.params.agentId, request.query.session)),
        );
      },
    },
  };
};

/** AGENT_RUNTIME_PROVIDER: processes on this machine (volumes under <data dir>/agents), or Fly Machines. */
function configuredProvider(ctx: AppContext): RuntimeProvider {
  const runtimes = ctx.config.agentRuntimes;
  if (runtimes.provider === 'fly') return new FlyRuntimeProvider(runtimes);
  return new LocalRuntimeProvider(path.join(ctx.config.dataDir, 'agents'), ctx.log.child({ component: 'agent-runtimes' }));
}

export const agentsModule = createAgentsModule();
