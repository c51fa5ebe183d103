import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import type { ModuleFactory, ZodApp } from '../module.js';
import type { RelayAsset } from './credential.js';
import { MAX_TIMEOUT_SECONDS, RelayService } from './relay.js';
import { RelayStore } from './store.js';

/** The spec's limit on a relay body (validate, broadcast). */
export const RELAY_BODY_LIMIT = 64 * 1024;
const tags = ['relay'];
const relayError = directErrorSchema.extend({ success: z.literal(false), accepted: z.literal(false) });
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

  const routes = (app: ZodApp) => {
    app.get(
      '/supported',
      { schema: { tags, summary: 'Supported methods and assets (read it rather than assume future support)' } },
      async () => ({
        methods: [{ method: 'evm', intent: 'charge', credentialTypes: ['authorization'] }],
        assets: [{ network: asset.network, chainId: asset.chainId, address: asset.address, symbol: asset.symbol, decimals: asset.decimals, maxTimeoutSeconds: MAX_TIMEOUT_SECONDS }],
      }),
    );
    app.post(
      '/v1/mpp/validate',
      { bodyLimit: RELAY_BODY_LIMIT, schema: { tags, summary: 'Validate a credential without broadcasting (advisory)', body, response: { 200: z.any().describe('{ success: true, accepted: true, method, intent, source, details }'), ...errors(400, 413, 422, 500, 503) } } },
      async (request, reply) => {
        const answer = await relay.validate(request.body);
        return reply.code(answer.status as 200).send(answer.body);
      },
    );
    app.post(
      '/v1/mpp/broadcast',
      {
        bodyLimit: RELAY_BODY_LIMIT,
        schema: { tags, summary: 'Validate and settle a credential (Idempotency-Key required, 8-200 chars)', body, response: { 200: z.any().describe('{ success: true, receipt }'), ...errors(400, 409, 413, 422, 500, 503) } },
      },
      async (request, reply) => {
        const key = request.headers['idempotency-key'];
        const answer = await relay.broadcast(typeof key === 'string' ? key : null, request.body);
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
