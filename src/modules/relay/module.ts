import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import { MemoryRateLimiter } from '../../platform/rate-limiter.js';
import { callerOf } from '../../platform/request-context.js';
import type { ModuleFactory, ZodApp } from '../module.js';
import type { RelayAsset } from './credential.js';
import { relayErrors } from './errors.js';
import { MAX_TIMEOUT_SECONDS, RelayService } from './relay.js';
import { RelayStore } from './store.js';

/** The spec's limit on a relay body (validate, broadcast). */
export const RELAY_BODY_LIMIT = 64 * 1024;
const tags = ['relay'];
const relayError = directErrorSchema.extend({ success: z.literal(false), accepted: z.literal(false) });
const supportedSchema = z.object({
  methods: z.array(z.object({ method: z.string(), intent: z.string(), credentialTypes: z.array(z.string()) })),
  assets: z.array(z.object({ network: z.string(), chainId: z.number().int(), address: z.string(), symbol: z.string(), decimals: z.number().int(), maxTimeoutSeconds: z.number().int() })),
});
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((status) => [status, relayError]));
// The credential and request are checked by parseRelayBody (mppx's schemas), not by the route.
const body = z.unknown().describe('{ credential, request }: a Payment credential (object, or the serialized `Payment …` string) and the charge request');

const assetOf = (ctx: AppContext): RelayAsset => ({
  chainId: ctx.chain.chainId,
  network: ctx.chain.asset.network,
  address: ctx.chain.asset.address,
  symbol: ctx.chain.asset.symbol,
  decimals: ctx.chain.asset.decimals,
  name: ctx.chain.asset.eip712.name,
  version: ctx.chain.asset.eip712.version,
});

/** The MPP payment relay (method evm, intent charge) on the relay origin. */
export const relayModule: ModuleFactory = (ctx) => {
  const store = new RelayStore(ctx.db);
  const asset = assetOf(ctx);
  const relay = new RelayService(ctx, store, asset, ctx.config.relay);

  // Anyone can call the relay origin: limit per client address, before the body is even parsed. A
  // broadcast may spend our relayer's gas, so broadcasts are counted in PostgreSQL across nodes; a validate
  // sends nothing and a database write would cost more than most of it, so each node counts validates in memory.
  const validateCounter = new MemoryRateLimiter(ctx.clock);
  const limited = (path: 'broadcast' | 'validate') => async (request: FastifyRequest) => {
    const { broadcastPerClient, validatePerClient, windowSeconds } = ctx.config.relay.limits;
    const key = `relay-${path}:client:${request.ip}`;
    const result =
      path === 'broadcast'
        ? await ctx.rateLimiter.hit(key, { limit: broadcastPerClient, windowSeconds })
        : validateCounter.hit(key, { limit: validatePerClient, windowSeconds });
    if (!result.allowed) throw relayErrors.rateLimited(result.retryAfterSeconds);
  };

  const routes = (app: ZodApp) => {
    app.get(
      '/supported',
      { schema: { tags, summary: 'Supported methods and assets (read it rather than assume future support)', response: { 200: supportedSchema, 500: relayError } } },
      async () => ({
        methods: [{ method: 'evm', intent: 'charge', credentialTypes: ['authorization'] }],
        assets: [{ network: asset.network, chainId: asset.chainId, address: asset.address, symbol: asset.symbol, decimals: asset.decimals, maxTimeoutSeconds: MAX_TIMEOUT_SECONDS }],
      }),
    );
    app.post(
      '/v1/mpp/validate',
      {
        bodyLimit: RELAY_BODY_LIMIT,
        onRequest: limited('validate'),
        schema: { tags, summary: 'Validate a credential without broadcasting (advisory)', body, response: { 200: z.any().describe('{ success: true, accepted: true, method, intent, source, details }'), ...errors(400, 413, 422, 429, 500, 503) } },
      },
      async (request, reply) => {
        const answer = await relay.validate(request.body, callerOf(request));
        return reply.code(answer.status as 200).send(answer.body);
      },
    );
    app.post(
      '/v1/mpp/broadcast',
      {
        bodyLimit: RELAY_BODY_LIMIT,
        onRequest: limited('broadcast'),
        schema: {
          tags,
          summary: 'Validate and settle a credential (Idempotency-Key required, 8-200 chars, one record per payer and key)',
          body,
          response: { 200: z.any().describe('{ success: true, receipt }'), ...errors(400, 409, 413, 422, 429, 500, 503) },
        },
      },
      async (request, reply) => {
        const key = request.headers['idempotency-key'];
        const answer = await relay.broadcast(typeof key === 'string' ? key : null, request.body, callerOf(request));
        return reply.code(answer.status as 200).header('cache-control', 'no-store').send(answer.body);
      },
    );
  };

  return {
    name: 'relay',
    routes: { relay: routes },
    loops: [{ name: 'relay-idempotency-prune', intervalMs: 10 * 60_000, leader: true, run: async () => (await store.prune(1_000)) === 1_000 }],
  };
};
