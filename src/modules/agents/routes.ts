import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { sendIdempotent } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { callerOf } from '../../platform/request-context.js';
import type { Module } from '../module.js';
import {
  agentIdParams,
  agentStateResult,
  budgetBody,
  budgetSchema,
  CHAT_LIMITS,
  chatBody,
  chatHistory,
  chatResult,
  configBody,
  createAgentBody,
  createAgentResult,
  exportSchema,
  historyQuery,
  listedAgentSchema,
  providerEntrySchema,
  providerParams,
  renewResult,
  runtimeConfigSchema,
  sessionParams,
  sessionsSchema,
  setProviderBody,
  toolPaymentBody,
  usageSchema,
  withdrawBody,
  type Purchase,
  type Renewal,
} from './schemas.js';
import { paymentSchema } from '../wallets/pay-schemas.js';
import { AgentChat, turnHeartbeatMs } from './chat.js';
import { ChatStore } from './chat-store.js';
import { agentsErrors } from './errors.js';
import { AgentLifecycle } from './lifecycle.js';
import { AgentOperations } from './operations.js';
import { AgentPayments, holdsLoop } from './payments.js';
import { AgentSecrets, providerKeyBinding, runtimeTokenBinding } from './agent-secrets.js';
import { AgentsService } from './service.js';
import { AgentDeployer } from './deployer.js';
import { AgentSupervisor, agentLoops } from './supervisor.js';
import { AgentWalletPolicy } from './wallet-policy.js';
import { agentWalletRoutes } from './wallet-routes.js';
import { PaidChat } from './paid-chat.js';
import { paidChatRoutes } from './paid-chat-routes.js';
import { PaidChatStore } from './paid-chat-store.js';
import { AGENTS_WALLET_OWNER } from './deployer.js';
import { FlyRuntimeProvider } from './fly-provider.js';
import { LocalRuntimeProvider } from './local-provider.js';
import { RuntimeClient } from './runtime-client.js';
import type { RuntimeProvider } from './runtime-provider.js';
import { agentInstances, agentProviderKeys } from './tables.js';

export interface AgentsModuleOptions {
  /** Where runtimes run; default: processes on this machine, volumes under <data dir>/agents. */
  provider?: (ctx: AppContext) => RuntimeProvider;
}

const wantsEvents = (request: FastifyRequest) => (request.headers.accept ?? '').includes('text/event-stream');

/** Hosted agents (the spec's Agents section and the extensions in docs/agents.md). Needs the credits and wallets modules. */
export const createAgentsModule = (options: AgentsModuleOptions = {}) => (ctx: AppContext): Module => {
  const service = new AgentsService(ctx);
  ctx.keyRotation.sealedColumn({ name: 'agent_instances.sealed_token', table: agentInstances, key: [agentInstances.id], column: agentInstances.sealedToken, associatedData: (key) => runtimeTokenBinding(key.id!) });
  ctx.keyRotation.sealedColumn({
    name: 'agent_provider_keys.sealed_key',
    table: agentProviderKeys,
    key: [agentProviderKeys.agentId, agentProviderKeys.provider],
    column: agentProviderKeys.sealedKey,
    associatedData: (key) => providerKeyBinding(key.agent_id!, key.provider!),
  });
  const store = service.store;
  const chats = new ChatStore(ctx.db);
  const provider = options.provider?.(ctx) ?? configuredProvider(ctx);
  const secrets = new AgentSecrets(ctx.config);
  const runtime = new RuntimeClient(secrets, ctx.log.child({ component: 'agent-runtimes' }));
  const deployer = new AgentDeployer(ctx, store, provider, secrets);
  const supervisor = new AgentSupervisor(ctx, store, provider, runtime, deployer);
  const operations = new AgentOperations(ctx, store, chats, secrets, runtime);
  const paidChatStore = new PaidChatStore(ctx.db);
  const payments = new AgentPayments(ctx, store, chats, secrets, paidChatStore);
  const chat = new AgentChat(ctx, store, chats, secrets, runtime, payments);
  const walletPolicy = new AgentWalletPolicy(ctx);
  const paidChat = new PaidChat(ctx, store, paidChatStore, chat, chats, async (agent) =>
    agent.walletId ? ((await ctx.services.wallets.get(AGENTS_WALLET_OWNER, agent.walletId)).address ?? null) : null,
  );
  const lifecycle = new AgentLifecycle(ctx, store, chats, supervisor, operations.config, (agent) => payments.holdsMoney(agent));
  const userOf = (request: FastifyRequest) => principalOf(request, 'identity').userId;
  // Every agent route's first step: the caller's own agent (params validated as a uuid by its schema).
  const agentOf = (request: FastifyRequest) => operations.owned(userOf(request), (request.params as { agentId: string }).agentId);
  const signedIn = ctx.auth.guard(['identity']);
  const security = [{ bearer: [] }];
  const tags = ['agents'];
  const params = agentIdParams;

  return {
    name: 'agents',
    loops: [...agentLoops(deployer, supervisor), holdsLoop(payments), { name: 'agents.turns', intervalMs: turnHeartbeatMs(ctx.config.agentTurnStaleSeconds), leader: true, run: () => chat.failStale() }],
    close: () => provider.close(),
    routes: {
      api: (app) => {
        // A shutdown stops the turns this node runs (their clients told, the turns failed) before the listeners drain.
        app.addHook('preClose', async () => chat.shutdown());
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
          async (request, reply) =>
            // With an Idempotency-Key the answer is written in the purchase's transaction: one agent per key.
            sendIdempotent(ctx.idempotency, request, reply, 'agents.purchase', async (attempt) => {
              const answer = (purchase: Purchase) => ({ status: 201, body: envelope(purchase) });
              return answer(await service.create(userOf(request), request.body, attempt ? (tx, purchase) => attempt.finishIn(tx, answer(purchase)) : undefined));
            }),
        );
        app.get(
          '/agents/:agentId',
          { onRequest: signedIn, schema: { tags, summary: 'The agent, as the list shows it (with its runtimeInstance) (extension)', security, params, response: { 200: envelopeSchema(listedAgentSchema), ...errors(400, 401, 404) } } },
          async (request) => envelope(await service.view(await agentOf(request))),
        );
        app.delete(
          '/agents/:agentId',
          { onRequest: signedIn, schema: { tags, summary: 'Delete the agent: its runtime, volume and histories are removed; no refund; 409 while its wallet holds USDG (extension)', security, params, response: { 200: envelopeSchema(z.object({ deleted: z.literal(true) })), ...errors(400, 401, 404, 409) } } },
          async (request) => {
            await lifecycle.delete(await agentOf(request));
            return envelope({ deleted: true as const });
          },
        );
        app.post(
          '/agents/:agentId/stop',
          { onRequest: signedIn, schema: { tags, summary: 'Stop the running agent (no charge back; start it again inside its paid month) (extension)', security, params, response: { 200: envelopeSchema(agentStateResult), ...errors(400, 401, 404, 409) } } },
          async (request) => envelope(await lifecycle.stop(await agentOf(request))),
        );
        app.post(
          '/agents/:agentId/start',
          { onRequest: signedIn, schema: { tags, summary: 'Start a stopped agent inside its paid month: deployed again on its volume (extension)', security, params, response: { 200: envelopeSchema(agentStateResult), ...errors(400, 401, 404, 409) } } },
          async (request) => envelope(await lifecycle.start(await agentOf(request))),
        );
        app.post(
          '/agents/:agentId/renew',
          {
            onRequest: signedIn,
            schema: { tags, summary: 'Renew the agent for one more month: 1000 credit cents, expiresAt one month later (extension)', security, params, response: { 200: envelopeSchema(renewResult), ...errors(400, 401, 402, 404, 409) } },
          },
          async (request, reply) =>
            sendIdempotent(ctx.idempotency, request, reply, 'agents.renew', async (attempt) => {
              const answer = (renewal: Renewal) => ({ status: 200, body: envelope(renewal) });
              return answer(await lifecycle.renew(userOf(request), await agentOf(request), attempt ? (tx, renewal) => attempt.finishIn(tx, answer(renewal)) : undefined));
            }),
        );
        app.get(
          '/agents/:agentId/export',
          { onRequest: signedIn, schema: { tags, summary: "The agent, its configuration and every session's transcript, until its volume is removed (extension)", security, params, response: { 200: envelopeSchema(exportSchema), ...errors(400, 401, 404, 410) } } },
          async (request, reply) => {
            reply.header('content-disposition', `attachment; filename="agent-${request.params.agentId}.json"`);
            return envelope(await lifecycle.export(await agentOf(request)));
          },
        );
        app.get(
          '/agents/:agentId/config',
          { onRequest: signedIn, schema: { tags, summary: "The agent's configuration: the model each provider uses and the bot's settings", security, params, response: { 200: envelopeSchema(runtimeConfigSchema), ...errors(400, 401, 404) } } },
          async (request) => envelope(await operations.config(await agentOf(request))),
        );
        app.put(
          '/agents/:agentId/config',
          {
            onRequest: signedIn,
            schema: { tags, summary: 'Set the models and bot settings (null restores the defaults); the next turn uses them (extension)', security, params, body: configBody, response: { 200: envelopeSchema(runtimeConfigSchema), ...errors(400, 401, 404) } },
          },
          async (request) => envelope(await operations.setConfig(await agentOf(request), request.body)),
        );
        app.get(
          '/agents/:agentId/providers',
          { onRequest: signedIn, schema: { tags, summary: "The agent's model providers, keys masked", security, params, response: { 200: envelopeSchema(z.array(providerEntrySchema)), ...errors(400, 401, 404) } } },
          async (request) => envelope(await operations.providers(await agentOf(request))),
        );
        app.put(
          '/agents/:agentId/providers',
          {
            onRequest: signedIn,
            config: { audit: { action: 'agent.provider-key.set', target: ({ params }) => params.agentId } },
            schema: {
              tags,
              summary: "Set the agent's key for a model provider (stored sealed; the one set last answers chats)",
              security,
              params,
              body: setProviderBody,
              response: { 200: envelopeSchema(providerEntrySchema), ...errors(400, 401, 404) },
            },
          },
          async (request) => envelope(await operations.setProvider(await agentOf(request), request.body.provider, request.body.apiKey)),
        );
        app.delete(
          '/agents/:agentId/providers/:provider',
          {
            onRequest: signedIn,
            config: { audit: { action: 'agent.provider-key.delete', target: ({ params }) => params.agentId } },
            schema: { tags, summary: "Remove the agent's key for a provider; of those left, the one set last answers chats (extension)", security, params: providerParams, response: { 200: envelopeSchema(z.object({ provider: z.string(), deleted: z.literal(true) })), ...errors(400, 401, 404) } },
          },
          async (request) => envelope(await operations.deleteProvider(await agentOf(request), request.params.provider)),
        );
        app.post(
          '/agents/:agentId/chat',
          {
            onRequest: signedIn,
            bodyLimit: CHAT_LIMITS.bodyBytes,
            schema: {
              tags,
              summary: 'Chat with the agent: the new messages of a session; with Accept: text/event-stream the reply streams as Server-Sent Events',
              description: 'SSE: `event: delta` with `{text}` per chunk, then `event: done` with the JSON answer (`{message, raw, text}`), or `event: error` with the error envelope.',
              security,
              params,
              body: chatBody,
              response: { 200: envelopeSchema(chatResult), ...errors(400, 401, 404, 409, 413, 429, 502, 503) },
            },
          },
          async (request, reply) => {
            const agent = await agentOf(request);
            if (!wantsEvents(request)) return envelope(await chat.chat(agent, request.body, request.id));
            await chat.stream(agent, request.body, reply, request.id);
            return reply;
          },
        );
        app.get(
          '/agents/:agentId/chat/history',
          {
            onRequest: signedIn,
            schema: { tags, summary: "A session's messages, and in raw its whole transcript with tool calls and results", security, params, querystring: historyQuery, response: { 200: envelopeSchema(chatHistory), ...errors(400, 401, 404) } },
          },
          async (request) => envelope(await chat.history(await agentOf(request), request.query.session)),
        );
        app.get(
          '/agents/:agentId/chat/sessions',
          { onRequest: signedIn, schema: { tags, summary: "The agent's sessions, the most recently used first", security, params, response: { 200: envelopeSchema(sessionsSchema), ...errors(400, 401, 404) } } },
          async (request) => envelope((await chats.sessions((await agentOf(request)).id)).map((s) => ({ ...s, updatedAt: s.updatedAt.toISOString() }))),
        );
        app.delete(
          '/agents/:agentId/chat/sessions/:session',
          { onRequest: signedIn, schema: { tags, summary: 'Delete a session and its whole transcript', security, params: sessionParams, response: { 200: envelopeSchema(z.object({ session: z.string(), deleted: z.literal(true) })), ...errors(400, 401, 404) } } },
          async (request) => {
            const agent = await agentOf(request);
            if (!(await chats.deleteSessions(agent.id, request.params.session))) throw agentsErrors.sessionNotFound();
            return envelope({ session: request.params.session, deleted: true as const });
          },
        );
        app.get(
          '/agents/:agentId/budget',
          { onRequest: signedIn, schema: { tags, summary: "The agent's daily model-token budget and today's use, and runtime_b's payment budget (extension)", security, params, response: { 200: envelopeSchema(budgetSchema), ...errors(400, 401, 404, 503) } } },
          async (request) => envelope(await operations.budget(await agentOf(request))),
        );
        app.put(
          '/agents/:agentId/budget',
          {
            onRequest: signedIn,
            schema: { tags, summary: "Set the agent's daily model-token budget and/or runtime_b's payment budget (extension)", security, params, body: budgetBody, response: { 200: envelopeSchema(budgetSchema), ...errors(400, 401, 404, 409, 503) } },
          },
          async (request) => envelope(await operations.setBudget(await agentOf(request), request.body)),
        );
        app.get(
          '/agents/:agentId/usage',
          { onRequest: signedIn, schema: { tags, summary: 'Tokens used today and in all, and the tool payments made (extension)', security, params, response: { 200: envelopeSchema(usageSchema), ...errors(400, 401, 404) } } },
          async (request) => envelope(await operations.usage(await agentOf(request))),
        );
        agentWalletRoutes(app, { signedIn, agentOf, userOf, payments, walletPolicy });
        paidChatRoutes(app, { ctx, signedIn, agentOf, paidChat });
        app.post(
          '/agents/:agentId/wallet/withdraw',
          {
            onRequest: signedIn,
            schema: {
              tags,
              summary: "runtime_b: send USDG from the agent's own wallet to an address you name (extension)",
              description:
                'The transfer is a payment of the wallet: `status` settled with its transaction, failed with why, or unknown/pending until the chain says. ' +
                'Send an Idempotency-Key (8–200 printable ASCII): the same key again answers the same transfer and never sends a second one. ' +
                'Each transfer costs the service gas: an amount below AGENT_WITHDRAW_MIN_AMOUNT is 400 `withdrawal_below_minimum` unless it is the whole balance, ' +
                'and beyond AGENT_WITHDRAW_LIMIT_PER_HOUR new withdrawals per agent 429 `rate_limited` with Retry-After (a same-key retry is answered all the same).',
              security,
              params,
              body: withdrawBody,
              response: { 200: envelopeSchema(z.object({ transfer: paymentSchema })), ...errors(400, 401, 404, 409, 429) },
            },
          },
          async (request) => {
            const key = request.headers['idempotency-key'];
            if (key !== undefined && (typeof key !== 'string' || !/^[\x21-\x7e]{8,200}$/.test(key))) throw agentsErrors.invalidIdempotencyKey();
            return envelope(await payments.withdraw(await agentOf(request), request.body, key ?? null, callerOf(request)));
          },
        );
        // The runtime's own route (runtime_b's tool), authenticated by its token, not a user's: kept out of the
        // public API description (docs/agents.md documents it).
        app.post(
          '/agents/:agentId/runtime/pay-and-call',
          { schema: { hide: true, params, body: toolPaymentBody } },
          async (request) => {
            const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
            return envelope(await payments.pay(request.params.agentId, token, request.body, callerOf(request)));
          },
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
