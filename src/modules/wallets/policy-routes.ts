import { z } from 'zod';
import type { preHandlerAsyncHookHandler } from 'fastify';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import { approvalEventsBody, approvalParams, approvalQueueSchema, approvalSchema, approvalsQuery, budgetLimitSchema, policyBody, policySchema } from './policy-schemas.js';
import type { WalletPolicies } from './policy-service.js';
import { walletIdParams } from './schemas.js';
import type { WalletsService } from './service.js';

type Guard = preHandlerAsyncHookHandler;

/**
 * Spend policies, budgets and approvals (extension; docs/wallets.md, "Spend policies"). The management
 * credential sets and reads them for its wallets and decides approvals; a wallet credential reads its own
 * policy and budget, never changes them.
 */
export function policyRoutes(app: ZodApp, deps: { mgmt: Guard; walletCredential: Guard; wallets: WalletsService; policies: WalletPolicies }) {
  const { mgmt, walletCredential, wallets, policies } = deps;
  const security = [{ bearer: [] }];
  const tags = ['wallets'];
  /** The wallet's id once the management credential is proven to own it (404 otherwise). */
  const owned = async (request: Parameters<typeof principalOf>[0], walletId: string) => (await wallets.get(principalOf(request, 'mgmt').credentialId, walletId)).id;

  app.get(
    '/v1/wallets/me/policy',
    { onRequest: walletCredential, schema: { tags, summary: "The wallet's spend policy, read-only (extension)", security, response: { 200: envelopeSchema(policySchema), ...errors(401) } } },
    async (request) => envelope(await policies.policy(principalOf(request, 'wallet').walletId)),
  );
  app.get(
    '/v1/wallets/me/budget',
    { onRequest: walletCredential, schema: { tags, summary: "Per limit of the wallet's policy: spent, reserved and remaining in its window (extension)", security, response: { 200: envelopeSchema(z.array(budgetLimitSchema)), ...errors(401) } } },
    async (request) => envelope(await policies.budget(principalOf(request, 'wallet').walletId)),
  );
  app.get(
    '/v1/wallets/:walletId/policy',
    { onRequest: mgmt, schema: { tags, summary: "A wallet's spend policy (extension)", security, params: walletIdParams, response: { 200: envelopeSchema(policySchema), ...errors(401, 404) } } },
    async (request) => envelope(await policies.policy(await owned(request, request.params.walletId))),
  );
  app.put(
    '/v1/wallets/:walletId/policy',
    {
      onRequest: mgmt,
      config: { audit: { action: 'wallet.policy.set', target: ({ params }) => params.walletId } },
      schema: {
        tags,
        summary: "Set a wallet's spend policy, replacing the previous one (extension)",
        description:
          'Every field optional; an absent field is no rule, `{}` removes every rule. Applies to the next pay-and-call at once, on every node. Limits are rolling windows over the open and settled pay-and-call payments of their network and asset. A refusal of pay-and-call is 409 with `data.reason` (`policy_limit_exceeded`, `policy_per_call_exceeded`, `policy_host_denied`, `policy_payto_denied`) and `data.rule`; above `approvalAbove` it answers 202 with `data.approval`.',
        security,
        params: walletIdParams,
        body: policyBody,
        response: { 200: envelopeSchema(policySchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await policies.setPolicy(await owned(request, request.params.walletId), request.body, principalOf(request, 'mgmt').credentialId)),
  );
  app.get(
    '/v1/wallets/:walletId/budget',
    { onRequest: mgmt, schema: { tags, summary: "Per limit of a wallet's policy: spent, reserved and remaining in its window (extension)", security, params: walletIdParams, response: { 200: envelopeSchema(z.array(budgetLimitSchema)), ...errors(401, 404) } } },
    async (request) => envelope(await policies.budget(await owned(request, request.params.walletId))),
  );
  app.get(
    '/v1/wallets/:walletId/approvals',
    {
      onRequest: mgmt,
      schema: { tags, summary: "A wallet's approvals, newest first, with every decision (who, when) (extension)", security, params: walletIdParams, querystring: approvalsQuery, response: { 200: envelopeSchema(z.array(approvalSchema)), ...errors(400, 401, 404) } },
    },
    async (request) => envelope(await policies.approvals(await owned(request, request.params.walletId), request.query.status)),
  );
  app.get(
    '/v1/wallets/:walletId/approval-events',
    { onRequest: mgmt, schema: { tags, summary: "The event queue a wallet's approval requests are published into, or null (extension)", security, params: walletIdParams, response: { 200: envelopeSchema(approvalQueueSchema), ...errors(401, 404) } } },
    async (request) => envelope(await policies.approvalQueue(await owned(request, request.params.walletId))),
  );
  app.put(
    '/v1/wallets/:walletId/approval-events',
    {
      onRequest: mgmt,
      config: { audit: { action: 'wallet.approval-events.set', target: ({ params }) => params.walletId } },
      schema: {
        tags,
        summary: "Publish a wallet's approval requests into a project's event queue (null: stop) (extension)",
        description:
          'Body `{ projectId, queueId, projectApiKey }`: the management credential belongs to no project, so an active API key of the queue\'s project proves the right to publish into it (checked, never stored or shown). Each new approval request then publishes `{ type: "wallet_approval.requested", approvalId, walletId, approval }` in the transaction that asks for it; consume it with the queue\'s claim/ack API (docs/events.md) to page a person. A key that is not an active key of that project, or a queue not of it: 404 `queue_not_found`.',
        security,
        params: walletIdParams,
        body: approvalEventsBody,
        response: { 200: envelopeSchema(approvalQueueSchema), ...errors(400, 401, 404) },
      },
    },
    async (request) => envelope(await policies.setApprovalQueueByKey(await owned(request, request.params.walletId), request.body)),
  );
  for (const [action, decision] of [['approve', 'approved'], ['deny', 'denied']] as const) {
    app.post(
      `/v1/wallets/:walletId/approvals/:approvalId/${action}`,
      {
        onRequest: mgmt,
        config: { audit: { action: `wallet.approval.${action}`, target: ({ params }) => params.approvalId } },
        schema: {
          tags,
          summary: action === 'approve' ? 'Approve a pending payment: the agent repeats its call with approvalId, once (extension)' : 'Deny a pending payment (extension)',
          description: 'Only a pending approval that has not expired (database time) can be decided; the same decision again answers it unchanged; otherwise 409 `approval_not_pending`.',
          security,
          params: approvalParams,
          response: { 200: envelopeSchema(approvalSchema), ...errors(401, 404, 409) },
        },
      },
      async (request) => envelope(await policies.decide(await owned(request, request.params.walletId), request.params.approvalId, decision, principalOf(request, 'mgmt').credentialId)),
    );
  }
}
