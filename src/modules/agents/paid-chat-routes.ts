import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { paymentRequiredSchema } from '../../x402/schemas.js';
import type { ZodApp } from '../module.js';
import type { PaidChat } from './paid-chat.js';
import { agentIdParams as params, CHAT_LIMITS, chatPriceBody, chatPriceSchema, paidChatBody, paidChatResult } from './schemas.js';
import type { AgentRow } from './store.js';

/**
 * An agent's chat sold per token (extension, issue 47; docs/agents.md, "Selling chat per token"): its owner's price
 * routes (signed in, the caller's own agent), and the public paid chat route, paid with an x402 `upto` permit.
 */
export function paidChatRoutes(app: ZodApp, deps: { ctx: AppContext; signedIn: preHandlerAsyncHookHandler; agentOf: (request: FastifyRequest) => Promise<AgentRow>; paidChat: PaidChat }) {
  const { ctx, signedIn, agentOf, paidChat } = deps;
  const security = [{ bearer: [] }];
  const tags = ['agents'];
  app.get(
    '/agents/:agentId/chat/price',
    { onRequest: signedIn, schema: { tags, summary: "What the agent's chat is sold at per token; null when it is not for sale (extension)", security, params, response: { 200: envelopeSchema(chatPriceSchema.nullable()), ...errors(400, 401, 404) } } },
    async (request) => envelope(await paidChat.price(await agentOf(request))),
  );
  app.put(
    '/agents/:agentId/chat/price',
    {
      onRequest: signedIn,
      config: { audit: { action: 'agent.chat-price.set', target: ({ params: p }) => p.agentId } },
      schema: {
        tags,
        summary: "Sell the agent's chat per token: a price per 1,000 tokens, a cap per turn, and where payments go (extension)",
        description: 'Applies to permits signed from now on: a turn already paid keeps the price it was signed at.',
        security,
        params,
        body: chatPriceBody,
        response: { 200: envelopeSchema(chatPriceSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await paidChat.setPrice(await agentOf(request), request.body)),
  );
  app.delete(
    '/agents/:agentId/chat/price',
    {
      onRequest: signedIn,
      config: { audit: { action: 'agent.chat-price.delete', target: ({ params: p }) => p.agentId } },
      schema: { tags, summary: "Stop selling the agent's chat (extension)", security, params, response: { 200: envelopeSchema(z.object({ deleted: z.boolean() })), ...errors(400, 401, 404) } },
    },
    async (request) => envelope({ deleted: await paidChat.stopSelling(await agentOf(request)) }),
  );
  app.post(
    '/agents/:agentId/paid-chat',
    {
      bodyLimit: CHAT_LIMITS.bodyBytes,
      schema: {
        tags,
        summary: 'Chat with an agent whose owner sells it, paying the tokens used with an x402 upto permit (no sign-in) (extension)',
        description:
          'Without PAYMENT-SIGNATURE: 402 with an `upto` challenge (Permit2) for the price of the turn cap. With a permit: one turn (the messages are the whole ' +
          'conversation), capped at maxTokensPerTurn, settled for its tokens × the price / 1000 rounded up; 200 with the answer, its usage and PAYMENT-RESPONSE. ' +
          'The same permit again answers the same turn and moves nothing more. A turn that fails costs nothing (settled for 0) and answers its error.',
        params,
        body: paidChatBody,
        response: { 200: envelopeSchema(paidChatResult), 402: paymentRequiredSchema, ...errors(400, 404, 409, 413, 429, 502, 503) },
      },
    },
    async (request, reply) => {
      const answer = await paidChat.serve(request, request.params.agentId, request.body.messages);
      if (!answer.paid) return ctx.x402.sendPaymentRequired(reply, answer.result.paymentRequired, answer.result.settlement);
      ctx.x402.writePaymentResponse(reply, answer.settlement);
      if ('failure' in answer) throw answer.failure;
      return envelope(answer.body);
    },
  );
}
