import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { z } from 'zod';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { approvalSchema, approvalsQuery, policyBody, policySchema } from '../wallets/policy-schemas.js';
import type { ZodApp } from '../module.js';
import type { AgentPayments } from './payments.js';
import { agentApprovalParams, agentIdParams as params, agentPaymentSchema, agentPaymentsQuery, approvalEventsBody, approvalEventsSchema } from './schemas.js';
import type { AgentRow } from './store.js';
import type { AgentWalletPolicy } from './wallet-policy.js';

/**
 * A runtime_b agent's wallet as its user sees it (extension; docs/agents.md, "The two agent types"): its
 * payments, its spend policy and approvals, and where its approval requests are published. Each route first
 * finds the caller's own agent (`agentOf`: 404 for anyone else's).
 */
export function agentWalletRoutes(
  app: ZodApp,
  deps: { signedIn: preHandlerAsyncHookHandler; agentOf: (request: FastifyRequest) => Promise<AgentRow>; userOf: (request: FastifyRequest) => string; payments: AgentPayments; walletPolicy: AgentWalletPolicy },
) {
  const { signedIn, agentOf, userOf, payments, walletPolicy } = deps;
  const security = [{ bearer: [] }];
  const tags = ['agents'];
    app.get(
      '/agents/:agentId/payments',
      {
        onRequest: signedIn,
        schema: {
          tags,
          summary: "runtime_b: the agent's wallet payments, newest first: its tool's (with the turn and session that paid) and withdrawals (extension)",
          description: 'Page with `before` = the last payment id of the previous page; an empty page is the end. An agent without a wallet has none.',
          security,
          params,
          querystring: agentPaymentsQuery,
          response: { 200: envelopeSchema(z.array(agentPaymentSchema)), ...errors(400, 401, 404) },
        },
      },
      async (request) => envelope(await payments.payments(await agentOf(request), request.query.limit, request.query.before)),
    );
    app.get(
      '/agents/:agentId/wallet/policy',
      { onRequest: signedIn, schema: { tags, summary: "runtime_b: its wallet's spend policy, as a wallet's (extension)", security, params, response: { 200: envelopeSchema(policySchema), ...errors(400, 401, 404, 409) } } },
      async (request) => envelope(await walletPolicy.policy(await agentOf(request))),
    );
    app.put(
      '/agents/:agentId/wallet/policy',
      {
        onRequest: signedIn,
        config: { audit: { action: 'agent.wallet-policy.set', target: ({ params }) => params.agentId } },
        schema: {
          tags,
          summary: "runtime_b: set its wallet's spend policy, replacing the previous one (extension)",
          description:
            "The wallets' policy shape (docs/wallets.md, Spend policies): limits over rolling windows, maxPerCall, allowed and denied hosts and recipients (payTo), approvalAbove. It applies to the agent's next tool payment; a refusal is told to the model with its reason and what remains. 409 `agent_has_no_wallet` for runtime_a, or before the first deployment.",
          security,
          params,
          body: policyBody,
          response: { 200: envelopeSchema(policySchema), ...errors(400, 401, 404, 409) },
        },
      },
      async (request) => envelope(await walletPolicy.setPolicy(await agentOf(request), request.body)),
    );
    app.get(
      '/agents/:agentId/wallet/approvals',
      {
        onRequest: signedIn,
        schema: { tags, summary: "runtime_b: its wallet's approval requests, newest first (extension)", security, params, querystring: approvalsQuery, response: { 200: envelopeSchema(z.array(approvalSchema)), ...errors(400, 401, 404, 409) } },
      },
      async (request) => envelope(await walletPolicy.approvals(await agentOf(request), request.query.status)),
    );
    for (const [action, decision] of [['approve', 'approved'], ['deny', 'denied']] as const) {
      app.post(
        `/agents/:agentId/wallet/approvals/:approvalId/${action}`,
        {
          onRequest: signedIn,
          config: { audit: { action: `agent.wallet-approval.${action}`, target: ({ params }) => params.approvalId } },
          schema: {
            tags,
            summary: action === 'approve' ? 'runtime_b: approve a pending payment; the agent pays it when it calls again (extension)' : 'runtime_b: deny a pending payment (extension)',
            security,
            params: agentApprovalParams,
            response: { 200: envelopeSchema(approvalSchema), ...errors(400, 401, 404, 409) },
          },
        },
        async (request) => envelope(await walletPolicy.decide(await agentOf(request), request.params.approvalId, decision)),
      );
    }
    app.get(
      '/agents/:agentId/wallet/approval-events',
      { onRequest: signedIn, schema: { tags, summary: "runtime_b: the event queue its wallet's approval requests are published into, or null (extension)", security, params, response: { 200: envelopeSchema(approvalEventsSchema), ...errors(400, 401, 404, 409) } } },
      async (request) => envelope(await walletPolicy.approvalEvents(await agentOf(request))),
    );
    app.put(
      '/agents/:agentId/wallet/approval-events',
      {
        onRequest: signedIn,
        config: { audit: { action: 'agent.approval-events.set', target: ({ params }) => params.agentId } },
        schema: {
          tags,
          summary: "runtime_b: publish its wallet's approval requests into one of your projects' event queues (null: stop) (extension)",
          description: 'Each new approval request publishes `{ type: "wallet_approval.requested", approvalId, walletId, approval }` in the transaction that asks for it; consume it with the queue\'s claim/ack API (docs/events.md) to page a person. Another user\'s project, or a queue not of that project, is 404.',
          security,
          params,
          body: approvalEventsBody,
          response: { 200: envelopeSchema(approvalEventsSchema), ...errors(400, 401, 404, 409) },
        },
      },
      async (request) => envelope(await walletPolicy.setApprovalEvents(userOf(request), await agentOf(request), request.body)),
    );
}
