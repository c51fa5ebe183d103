import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../platform/auth/authenticator.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrors, envelopeSchema, intentErrorSchema } from '../../platform/http/schemas.js';
import { callerOf } from '../../platform/request-context.js';
import type { Module, ModuleFactory, ZodApp } from '../module.js';
import { intentErrors } from './errors.js';
import { intentAdminCommands } from './admin.js';
import { intentEventSinkOf } from './events.js';
import { paymentChainOf, paymentRailOf } from './gateway.js';
import { PayService } from './pay.js';
import type { PaymentChain, PaymentRail } from './payments.js';
import { Reconciler } from './reconcile.js';
import { intentOutcomes } from './metrics.js';
import { paymentRequiredSchema } from '../../x402/schemas.js';
import { checkoutViewSchema, createIntentBody, intentIdParams, intentSchema, intentTotalsSchema, projectIntentsQuery, settlementBodySchema } from './schemas.js';
import { IntentsService } from './service.js';
import { IntentsStore } from './store.js';
import { checkoutView, intentView } from './views.js';
import { depositsLoop, reconciliationLoop } from './worker.js';
import { TransferFollower } from '../../chain/indexer/deposits.js';
import { createKeySealer } from '../../platform/master-key.js';
import { DepositKeys, sealedFor } from './deposit-keys.js';
import { paymentIntentDepositKeys } from './tables.js';
import { DepositStore } from './deposit-store.js';
import { Deposits } from './deposits.js';
import { RefundStore } from './refund-store.js';
import { refundRoutes } from './refund-routes.js';
import { Refunds } from './refunds.js';
import { DepositSweeper } from './sweep.js';

declare module '../../context.js' {
  interface Services {
    intents: IntentsService;
  }
}

export interface IntentsModuleOptions {
  /** Replace (or wrap) the payment side, e.g. to inject faults in tests. */
  rail?: (ctx: AppContext) => PaymentRail;
  chain?: (ctx: AppContext) => PaymentChain;
}

const tags = ['payment-intents'];
const security = [{ bearer: [] }];
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, intentErrorSchema]));

export function createIntentsModule(options: IntentsModuleOptions = {}): ModuleFactory {
  return (ctx) => intentsModuleWith(ctx, options);
}

export const intentsModule: ModuleFactory = createIntentsModule();

function intentsModuleWith(ctx: AppContext, options: IntentsModuleOptions): Module {
  const events = intentEventSinkOf(ctx);
  const store = new IntentsStore(ctx.db, ctx.services.projects.enabledMerchantQuery, ctx.clock, events);
  const reconciler = new Reconciler(store, (options.chain ?? paymentChainOf)(ctx), ctx.clock, ctx.log, intentOutcomes(ctx.metrics));
  // Deposit addresses: keys sealed under the wallets' master key, the watcher over the chain's asset.
  const depositStore = new DepositStore(ctx.db, ctx.chain.network, ctx.clock, events, intentOutcomes(ctx.metrics));
  const deposits = new Deposits(ctx, depositStore, new DepositKeys(createKeySealer(ctx.config)));
  ctx.keyRotation.sealedColumn({ name: 'payment_intent_deposit_keys.sealed_seed', table: paymentIntentDepositKeys, key: [paymentIntentDepositKeys.projectId], column: paymentIntentDepositKeys.sealedSeed, associatedData: (key) => sealedFor(key.project_id!) });
  const follower = new TransferFollower({
    client: ctx.chain.publicClient,
    token: ctx.chain.asset.address,
    sink: depositStore,
    confirmations: ctx.config.txapi.confirmations,
    startBlock: ctx.config.txapi.startBlock,
    maxBlocksPerTick: ctx.config.txapi.batchBlocks,
  });
  const refunds = new Refunds(ctx, store, new RefundStore(ctx.db, events));
  const service = new IntentsService(ctx, store, reconciler, deposits);
  const pay = new PayService(ctx, store, (options.rail ?? paymentRailOf)(ctx));
  ctx.services.intents = service;
  const projectKey = ctx.auth.guard(['project_key'], { code: 'project_unauthorized' });
  const signedIn = ctx.auth.guard(['identity']);
  const keyErrors = errors(400, 401, 403, 404);
  const view = (row: Parameters<typeof intentView>[0]) => intentView(row, ctx.urls.api);

  const routes = (app: ZodApp) => {
    app.post(
      '/v1/payment-intents',
      {
        onRequest: projectKey,
        schema: {
          tags,
          security,
          summary: 'Create a payment intent (idempotent on merchantId + externalId)',
          body: createIntentBody,
          response: { 200: intentSchema, 201: intentSchema, ...keyErrors, ...errors(409) },
        },
      },
      async (request, reply) => {
        const { created, intent } = await service.create(principalOf(request, 'project_key').projectId, request.body);
        return reply.code(created ? 201 : 200).send(view(intent));
      },
    );
    app.get(
      '/v1/payment-intents/:intentId',
      {
        onRequest: projectKey,
        schema: { tags, security, summary: 'Get a payment intent (authoritative for fulfillment)', params: intentIdParams, response: { 200: intentSchema, ...keyErrors } },
      },
      async (request) => view(await service.get(principalOf(request, 'project_key').projectId, request.params.intentId)),
    );
    app.post(
      '/v1/payment-intents/:intentId/reconcile',
      {
        onRequest: projectKey,
        schema: {
          tags,
          security,
          summary: 'Reconcile a settling intent against indexed settlements (idempotent, no body)',
          params: intentIdParams,
          response: { 200: intentSchema, ...keyErrors, ...errors(503) },
        },
      },
      async (request) => view(await service.reconcile(principalOf(request, 'project_key').projectId, request.params.intentId)),
    );
    app.get(
      '/v1/payment-intents/:intentId/checkout',
      {
        schema: {
          tags,
          summary: "The payer's view of an intent, for the hosted checkout (public, extension)",
          description: 'Merchant name, amount, status, expiry, payee and settlement: what a payer may see. Never metadata, customerRef, externalId or the project. Not cached.',
          params: intentIdParams,
          response: { 200: checkoutViewSchema, ...errors(400, 404) },
        },
      },
      async (request, reply) => {
        const { row, merchantName, deposit } = await service.checkout(request.params.intentId);
        reply.header('cache-control', 'no-store');
        return checkoutView(row, merchantName, deposit);
      },
    );
    app.get(
      '/v1/projects/:projectId/payment-intents',
      {
        onRequest: signedIn,
        schema: {
          tags,
          security,
          summary: "A project's intents for its owner, newest first (identity token, extension)",
          description: 'Filters: merchantId, status (a pending intent past its expiry counts as expired). Paging: limit (1-100, default 50) and before (the last id of the previous page). 404 when the project is not yours.',
          params: z.object({ projectId: z.uuid() }),
          querystring: projectIntentsQuery,
          response: { 200: envelopeSchema(z.array(intentSchema)), ...envelopeErrors(400, 401, 404) },
        },
      },
      async (request) => {
        const { merchantId, status, externalId, before, limit } = request.query;
        const rows = await service.listForOwner(principalOf(request, 'identity').userId, request.params.projectId, { merchantId, status, externalId, before, limit });
        return envelope(rows.map(view));
      },
    );
    app.get(
      '/v1/projects/:projectId/payment-intents/totals',
      {
        onRequest: signedIn,
        schema: {
          tags,
          security,
          summary: "Totals of a project's intents under the listing's filters (identity token, extension)",
          description: 'merchantId, status and externalId as the listing takes them; every page. 404 when the project is not yours.',
          params: z.object({ projectId: z.uuid() }),
          querystring: projectIntentsQuery.pick({ merchantId: true, status: true, externalId: true }),
          response: { 200: envelopeSchema(intentTotalsSchema), ...envelopeErrors(400, 401, 404) },
        },
      },
      async (request) => {
        const { merchantId, status, externalId } = request.query;
        return envelope(await service.totalsForOwner(principalOf(request, 'identity').userId, request.params.projectId, { merchantId, status, externalId }));
      },
    );
    refundRoutes(app, { ctx, refunds, projectKey, signedIn });
    app.post(
      '/v1/payment-intents/:intentId/pay',
      {
        schema: {
          tags,
          summary: 'Pay an intent with x402 (public; never send the project API key here)',
          description:
            'Without PAYMENT-SIGNATURE (or X-PAYMENT): 402 with the challenge. With it: verify, settle, 200 with the settlement and PAYMENT-RESPONSE.',
          params: intentIdParams,
          response: { 200: settlementBodySchema, 402: paymentRequiredSchema, ...errors(400, 403, 404, 409, 410, 429, 503) },
        },
      },
      async (request, reply) => {
        // A project key in a payer's request means it is exposed client-side: refuse, never use it.
        if (/^\s*bearer\s+svc_api_/i.test(request.headers.authorization ?? '')) {
          throw intentErrors.invalidRequest('The pay endpoint is public: do not send a project API key (keep it server-side)');
        }
        const answer = await pay.pay({
          intentId: request.params.intentId,
          paymentHeader: headerOf(request.headers['payment-signature']) ?? headerOf(request.headers['x-payment']),
          clientAddress: request.ip,
          caller: callerOf(request),
        });
        reply.code(answer.status).headers(answer.headers);
        return answer.status === 402 ? reply.send(answer.body as z.infer<typeof paymentRequiredSchema>) : reply.send(answer.body);
      },
    );
  };

  return {
    name: 'intents',
    adminCommands: intentAdminCommands(store, reconciler, ctx.clock),
    routes: {
      api: routes,
    },
    loops: [reconciliationLoop(ctx, store, reconciler), depositsLoop(ctx, { follower, deposits, sweeper: new DepositSweeper(ctx, deposits), refunds })],
  };
}

const headerOf = (value: string | string[] | undefined): string | null => {
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() ? first.trim() : null;
};
