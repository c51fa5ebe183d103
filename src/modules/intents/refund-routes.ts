// Refund routes (extension, docs/intents.md#refunds): the merchant's backend with its project API key, and the
// project's owner from the dashboard with an identity token. Creating one moves money: Idempotency-Key required,
// served by the one idempotency module; the refund takes the key's stable id, so a call resumed after its first
// one died carries that refund on instead of making another.
import type { onRequestHookHandler } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { requireIdempotencyKey, sendIdempotent } from '../../platform/http/idempotent.js';
import { envelope } from '../../platform/http/render.js';
import { callerOf } from '../../platform/request-context.js';
import { envelopeErrors, envelopeSchema, intentErrorSchema } from '../../platform/http/schemas.js';
import type { ZodApp } from '../module.js';
import type { Refunds } from './refunds.js';
import { intentIdParams, refundBody, refundSchema } from './schemas.js';
import { refundView } from './views.js';

const tags = ['payment-intents'];
const security = [{ bearer: [] }];
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, intentErrorSchema]));
const idempotencyHeader = z.object({ 'idempotency-key': z.string().optional().describe('Required: 8 to 200 printable ASCII characters; a repeat gets the first answer') });
const ownerParams = z.object({ projectId: z.uuid(), intentId: z.string().min(1).max(200) });

const DESCRIPTION =
  'Pays amountUsdCents back to the payer (the x402 payer, or the sender of the deposit that paid it) from the project\'s refund wallet ' +
  '(PATCH /v1/projects/{projectId} refundWalletId). At most what was received for the intent (its payment, over- and late payments) less what is refunded: ' +
  '409 refund_exceeds_refundable otherwise, also for the loser of two refunds racing for the last cents. 201 with the refund: succeeded, failed ' +
  '(nothing was paid; its cents may be refunded again), or pending (the transfer is not final yet; GET …/refunds follows it). ' +
  'payment_intent.refunded goes into the intent-events queue when it succeeds. Idempotency-Key required (400 idempotency_key_required).';

export function refundRoutes(app: ZodApp, deps: { ctx: AppContext; refunds: Refunds; projectKey: onRequestHookHandler; signedIn: onRequestHookHandler }): void {
  const { ctx, refunds, projectKey, signedIn } = deps;

  app.post(
    '/v1/payment-intents/:intentId/refunds',
    {
      onRequest: projectKey,
      schema: {
        tags,
        security,
        summary: 'Refund an intent to its payer (project API key, Idempotency-Key required, extension)',
        description: DESCRIPTION,
        params: intentIdParams,
        headers: idempotencyHeader,
        body: refundBody,
        response: { 201: refundSchema, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, 'a refund moves money');
      const projectId = principalOf(request, 'project_key').projectId;
      return sendIdempotent(ctx.idempotency, request, reply, 'intents.refund', async (attempt) => ({
        status: 201,
        body: refundView(await refunds.create(projectId, request.params.intentId, request.body.amountUsdCents, attempt?.id, callerOf(request))),
      }));
    },
  );
  app.get(
    '/v1/payment-intents/:intentId/refunds',
    {
      onRequest: projectKey,
      schema: { tags, security, summary: "An intent's refunds, newest first (project API key, extension)", params: intentIdParams, response: { 200: z.array(refundSchema), ...errors(400, 401, 403, 404) } },
    },
    async (request) => (await refunds.list(principalOf(request, 'project_key').projectId, request.params.intentId)).map(refundView),
  );
  app.post(
    '/v1/projects/:projectId/payment-intents/:intentId/refunds',
    {
      onRequest: signedIn,
      schema: {
        tags,
        security,
        summary: "Refund one of your project's intents (identity token, owner; Idempotency-Key required, extension)",
        description: `${DESCRIPTION} 404 when the project is not yours.`,
        params: ownerParams,
        headers: idempotencyHeader,
        body: refundBody,
        response: { 201: envelopeSchema(refundSchema), ...envelopeErrors(400, 401, 404, 409) },
      },
    },
    async (request, reply) => {
      requireIdempotencyKey(request, 'a refund moves money');
      const { projectId, intentId } = request.params;
      await ctx.services.projects.requireOwned(principalOf(request, 'identity').userId, projectId);
      return sendIdempotent(ctx.idempotency, request, reply, 'intents.refund', async (attempt) => ({
        status: 201,
        body: envelope(refundView(await refunds.create(projectId, intentId, request.body.amountUsdCents, attempt?.id, callerOf(request)))),
      }));
    },
  );
  app.get(
    '/v1/projects/:projectId/payment-intents/:intentId/refunds',
    {
      onRequest: signedIn,
      schema: { tags, security, summary: "Refunds of one of your project's intents, newest first (identity token, owner, extension)", params: ownerParams, response: { 200: envelopeSchema(z.array(refundSchema)), ...envelopeErrors(400, 401, 404) } },
    },
    async (request) => {
      const { projectId, intentId } = request.params;
      await ctx.services.projects.requireOwned(principalOf(request, 'identity').userId, projectId);
      return envelope((await refunds.list(projectId, intentId)).map(refundView));
    },
  );
}
