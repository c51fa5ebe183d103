import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { ChainUnavailableError } from '../../chain/errors.js';
import { ApiError, tooManyRequests } from '../../platform/http/errors.js';
import { directErrorSchema } from '../../platform/http/schemas.js';
import { MemoryRateLimiter } from '../../platform/rate-limiter.js';
import { callerOf } from '../../platform/request-context.js';
import { ChainSettlementReconciler } from '../../x402/facilitator/chain-reconciler.js';
import type { Facilitator } from '../../x402/facilitator/facilitator.js';
import { GasFloatLowError } from '../../x402/facilitator/gas-float.js';
import { Reason } from '../../x402/facilitator/reasons.js';
import { SettleBudgetError } from '../../x402/facilitator/settle-policy.js';
import { facilitatorRequestSchema, parseFacilitatorRequest } from '../../x402/payload.js';
import type { Module, ZodApp } from '../module.js';
import { PublicFacilitatorPolicy } from './policy.js';
import { settleResponseSchema, supportedResponseSchema, verifyResponseSchema } from './schemas.js';

/**
 * The facilitator origin (x402 v2 facilitator API) and, in the worker role, the reconciler that
 * resolves settlements nobody finished (crash after broadcast, receipt wait timed out).
 */
export function facilitatorModule(ctx: AppContext): Module {
  const facilitator = ctx.facilitator;
  if (!facilitator) {
    if (ctx.roles.includes('facilitator')) {
      throw new Error('the facilitator role needs a relayer key: set FACILITATOR_PRIVATE_KEYS (a pool) or FACILITATOR_PRIVATE_KEY (CHAIN_RPC_URL is set, so no dev key is generated)');
    }
    // A keyless worker (the keys live on the facilitator nodes, which run no loops) still resolves the
    // settlements a dead facilitator node left open, from the chain alone.
    const reconciler = new ChainSettlementReconciler({
      db: ctx.db,
      clock: ctx.clock,
      client: ctx.chain.publicClient,
      blockTime: ctx.chain.blockTime,
      log: ctx.log.child({ component: 'facilitator' }),
      reconcileAfterMs: ctx.config.facilitatorReconcileAfterMs,
    });
    return { name: 'facilitator', loops: [reconcileLoop('x402-settlement-reconcile-chain', () => reconciler.reconcileOpen())] };
  }
  return {
    name: 'facilitator',
    routes: { facilitator: (app) => routes(app, ctx, facilitator) },
    loops: [reconcileLoop('x402-settlement-reconcile', () => facilitator.reconcileOpen())],
  };
}

/**
 * One leader per kind: a keyed node's loop also takes over claims whose node died before sending, which a
 * keyless one cannot; under one name a keyless leader would keep every keyed node from ever doing that. Both
 * may resolve the same row; the first outcome written stands.
 */
const reconcileLoop = (name: string, reconcileOpen: () => Promise<{ checked: number }>) => ({
  name,
  intervalMs: 5_000,
  leader: true,
  run: async () => (await reconcileOpen()).checked === 50,
});

const unavailable = (error: unknown) => {
  if (error instanceof GasFloatLowError) return new ApiError(503, 'relayer_gas_low', `${error.message}: settles resume once the relayer is funded`, undefined, { 'retry-after': '60' });
  if (error instanceof ChainUnavailableError) return new ApiError(503, 'chain_unavailable', 'The chain RPC did not answer; nothing was sent', undefined, { 'retry-after': '5' });
  if (error instanceof SettleBudgetError) return new ApiError(429, 'rate_limited', error.message, undefined, { 'retry-after': String(error.retryAfterSeconds) });
  return error;
};

function routes(app: ZodApp, ctx: AppContext, facilitator: Facilitator) {
  // Anyone can call the public origin: limit per client address, before the body is even parsed.
  // Every settle spends our relayer's gas, so settles are counted in PostgreSQL across nodes; a
  // verify spends nothing and a database write would cost more than the verify, so each node counts
  // verifies in memory. Our own paid endpoints call the engine in-process, not through these routes.
  const verifyCounter = new MemoryRateLimiter(ctx.clock);
  // Beyond per client: which terms we serve, and settles per payer, per payTo and per owner (policy.ts).
  const policy = new PublicFacilitatorPolicy(ctx, facilitator);
  const limited = (path: 'settle' | 'verify') => async (request: FastifyRequest) => {
    const { settlePerClient, verifyPerClient, windowSeconds } = ctx.config.facilitatorLimits;
    const key = `facilitator-${path}:client:${request.ip}`;
    const result =
      path === 'settle'
        ? await ctx.rateLimiter.hit(key, { limit: settlePerClient, windowSeconds })
        : verifyCounter.hit(key, { limit: verifyPerClient, windowSeconds });
    if (!result.allowed) throw tooManyRequests(result.retryAfterSeconds);
  };

  app.get(
    '/supported',
    { schema: { tags: ['facilitator'], summary: 'Payment kinds, extensions and signer addresses', response: { 200: supportedResponseSchema, 500: directErrorSchema } } },
    async () => facilitator.supported(),
  );

  app.post(
    '/verify',
    {
      onRequest: limited('verify'),
      schema: {
        tags: ['facilitator'],
        summary: 'Verify a payment without settling it',
        body: facilitatorRequestSchema,
        response: { 200: verifyResponseSchema, 400: verifyResponseSchema, 429: directErrorSchema, 503: directErrorSchema },
      },
    },
    async (request, reply) => {
      const parsed = parseFacilitatorRequest(request.body.paymentPayload, request.body.paymentRequirements);
      if (!parsed.ok) return reply.code(400).send({ isValid: false, invalidReason: parsed.reason, invalidMessage: parsed.message });
      const refused = await policy.terms(parsed.payload, parsed.requirements);
      if (refused) return { isValid: false, invalidReason: refused.reason, invalidMessage: refused.message };
      try {
        return await facilitator.verify(parsed.payload, parsed.requirements, callerOf(request));
      } catch (error) {
        throw unavailable(error);
      }
    },
  );

  app.post(
    '/settle',
    {
      onRequest: limited('settle'),
      schema: {
        tags: ['facilitator'],
        summary: 'Settle a payment on chain (idempotent per authorization)',
        description:
          'Settles an authorization (an EIP-3009 or Permit2 `exact` payment, an `upto` permit, a batch-settlement deposit, ' +
          'claim, sweep or refund) at most once and answers `success: true` for it (for a claim, per voucher increment) at ' +
          'most once, ever; every other settle of it gets the scheme\'s "already used" reason with the transaction. A retry after a lost answer ' +
          'gets the first answer back when it carries the same x402 `payment-identifier` id and payload (another payload ' +
          'under that id: 409 `payment_identifier_conflict`). `errorReason: settlement_pending` means the transaction may ' +
          'be in flight: retry the same settle later.',
        body: facilitatorRequestSchema,
        response: { 200: settleResponseSchema, 400: settleResponseSchema, 409: settleResponseSchema, 429: directErrorSchema, 503: directErrorSchema },
      },
    },
    async (request, reply) => {
      const parsed = parseFacilitatorRequest(request.body.paymentPayload, request.body.paymentRequirements);
      if (!parsed.ok) {
        const network = (request.body.paymentRequirements as { network?: unknown } | null)?.network;
        return reply.code(400).send({
          success: false,
          errorReason: parsed.reason,
          errorMessage: parsed.message,
          transaction: '',
          network: typeof network === 'string' ? network : '',
        });
      }
      const refused = await policy.terms(parsed.payload, parsed.requirements);
      if (refused) {
        return { success: false, errorReason: refused.reason, errorMessage: refused.message, transaction: '', network: parsed.requirements.network };
      }
      try {
        // Anyone can call this door: it stops at a higher float than our own modules' settles.
        await facilitator.requireFloat('public');
        const caller = callerOf(request);
        await policy.chargeOwners(parsed.payload, parsed.requirements, caller);
        const result = await facilitator.settle(parsed.payload, parsed.requirements, caller);
        // x402 payment-identifier: the same id with another payload is a 409 Conflict.
        return reply.code(result.errorReason === Reason.paymentIdentifierConflict ? 409 : 200).send(result);
      } catch (error) {
        throw unavailable(error);
      }
    },
  );
}
