import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { AppContext } from '../../context.js';
import { envelope } from '../../platform/http/render.js';
import { envelopeErrorSchema, envelopeErrors as errors, envelopeSchema } from '../../platform/http/schemas.js';
import { callerOf } from '../../platform/request-context.js';
import { paymentRequiredSchema } from '../../x402/schemas.js';
import type { ZodApp } from '../module.js';
import type { Availability } from './availability.js';
import { storageErrors } from './errors.js';
import { readSingleFile } from './multipart.js';
import type { StorageReconciler } from './reconcile.js';
import { configSchema, orderParams, orderSchema, reconcileBody, STORAGE_LIMITS, uploadQuery } from './schemas.js';
import type { OrderRow, StorageStore } from './store.js';
import { orderOfKey, type UploadService } from './upload.js';
import { orderView } from './views.js';

const tags = ['storage'];

export interface StorageRouteDeps {
  ctx: AppContext;
  store: StorageStore;
  uploads: UploadService;
  reconciler: StorageReconciler;
  availability: Availability;
}

/** The public storage API: orders are authorized by their Idempotency-Key, payments by their signature. */
export function storageRoutes({ ctx, store, uploads, reconciler, availability }: StorageRouteDeps) {
  const view = (row: OrderRow) => orderView(row, ctx.urls, ctx.clock.now());
  /** The order the key authorizes, if it is this one: otherwise 404, never a hint that the id exists. */
  const orderFor = async (request: FastifyRequest, id: string) => {
    const row = await orderOfKey(ctx, store, headerOf(request.headers['idempotency-key']));
    if (!row || row.id !== id) throw storageErrors.orderNotFound();
    return row;
  };

  return async (app: ZodApp) => {
    app.get(
      '/v1/ipfs/config',
      { schema: { tags, summary: 'Upload configuration; check `available` before uploading', response: { 200: envelopeSchema(configSchema), 500: envelopeErrorSchema } } },
      async () =>
        envelope({
          available: await availability.available(),
          upload: {
            priceUsd: STORAGE_LIMITS.priceUsd,
            maxFileBytes: STORAGE_LIMITS.maxFileBytes,
            maxPixels: STORAGE_LIMITS.maxPixels,
            mimeTypes: [...STORAGE_LIMITS.mimeTypes],
            retentionDays: STORAGE_LIMITS.retentionDays,
          },
          delivery: { included: true, renewalsAvailable: false },
        }),
    );

    await app.register(async (plain) => {
      // Multipart only here; the parts are read (and bounded) by readSingleFile.
      await plain.register(multipart, { throwFileSizeLimit: true });
      const scope = plain.withTypeProvider<ZodTypeProvider>();
      scope.post(
        '/v1/ipfs/upload',
        {
          schema: {
            tags,
            summary: 'Upload one static image with payment (multipart, field `file`; Idempotency-Key required)',
            description:
              'Without PAYMENT-SIGNATURE: 402 with the x402 challenge for the order (resource.url carries its orderId). With it: verify, settle, store; 200 with the fulfilled order and PAYMENT-RESPONSE. A paid order is redeemed by repeating the upload.',
            querystring: uploadQuery,
            response: { 200: envelopeSchema(orderSchema), 402: paymentRequiredSchema, ...errors(400, 404, 409, 410, 413, 415, 502, 503) },
          },
        },
        async (request, reply) => {
          const file = await readSingleFile(request);
          const answer = await uploads.upload({
            idempotencyKey: headerOf(request.headers['idempotency-key']),
            orderId: request.query.orderId ?? null,
            file,
            paymentHeader: headerOf(request.headers['payment-signature']) ?? headerOf(request.headers['x-payment']),
            caller: callerOf(request),
          });
          reply.code(answer.status).headers(answer.headers);
          return answer.status === 402 ? reply.send(answer.body as z.infer<typeof paymentRequiredSchema>) : reply.send(envelope(answer.order));
        },
      );
    });

    app.get(
      '/v1/ipfs/orders/:id',
      {
        schema: { tags, summary: 'An upload order (Idempotency-Key of the upload required)', params: orderParams, response: { 200: envelopeSchema(orderSchema), ...errors(400, 404) } },
      },
      async (request, reply) => {
        reply.header('cache-control', 'no-store');
        return envelope(view(await orderFor(request, request.params.id)));
      },
    );

    app.post(
      '/v1/ipfs/orders/:id/reconcile',
      {
        schema: {
          tags,
          summary: 'Confirm a pending payment by its transaction hash (never charges, never uploads)',
          params: orderParams,
          body: reconcileBody,
          response: { 200: envelopeSchema(orderSchema), ...errors(400, 404, 409, 503) },
        },
      },
      async (request, reply) => {
        const order = await orderFor(request, request.params.id);
        reply.header('cache-control', 'no-store');
        return envelope(view(await reconciler.confirm(order, request.body.transactionHash)));
      },
    );
  };
}

const headerOf = (value: string | string[] | undefined): string | null => {
  const first = Array.isArray(value) ? value[0] : value;
  return first?.trim() ? first.trim() : null;
};
