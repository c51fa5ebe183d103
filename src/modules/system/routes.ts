import { z } from 'zod';
import { isEmbeddedChain } from '../../chain/settings.js';
import type { AppContext } from '../../context.js';
import { directErrorSchema, envelopeErrorSchema, envelopeSchema } from '../../platform/http/schemas.js';
import { envelopeCodeFor } from '../../platform/http/envelope-codes.js';
import { envelope } from '../../platform/http/render.js';
import type { Module, ZodApp } from '../module.js';

const healthData = z.object({ commit: z.string(), branch: z.string(), buildTime: z.string() });
const checkSchema = z.object({
  ok: z.boolean(),
  ms: z.number(),
  critical: z.boolean().describe('whether a failure of this check means this node cannot serve one of its roles'),
  reason: z.string().optional(),
  detail: z.record(z.string(), z.unknown()).optional(),
});
const devTokenBody = z.object({ sub: z.string().regex(/^[A-Za-z0-9._@:-]{1,200}$/, 'sub: 1-200 of A-Z a-z 0-9 . _ @ : -') });
const devTokenResult = z.object({ token: z.string(), sub: z.string(), expiresAt: z.string() });
const DEV_TOKEN_TTL_SECONDS = 3600;
/** The content type Fastify gives a serialized object: a JSON string sent with it is sent as it is. */
const JSON_TYPE = 'application/json; charset=utf-8';
const readyData = z.object({
  ready: z.boolean().describe('false only when a check critical for one of this node\'s roles fails'),
  status: z.enum(['ready', 'degraded', 'unready']).describe('degraded: only non-critical checks fail, the node still serves (200)'),
  failing: z.array(z.string()).describe('names of the failing checks, critical or not'),
  checks: z.record(z.string(), checkSchema),
});

/**
 * Whether POST /dev/identity/token exists: the dev issuer on the embedded devchain. Never on a real chain:
 * there a token is minted only by `tollgate dev token` on the machine that holds the issuer's key. The
 * dashboard offers its user-name sign-in exactly then (src/modules/web).
 */
export const devTokenRouteEnabled = (ctx: AppContext) => ctx.devIdentity !== null && isEmbeddedChain(ctx.config);

/** Health and readiness on every origin, the dev identity JWKS when the embedded issuer runs, rate-limit upkeep. */
export function systemModule(ctx: AppContext): Module {
  // An origin's errors are in its family's shape: the api's envelope, the direct shape elsewhere.
  const healthBody = JSON.stringify(envelope(ctx.build));
  const health = (app: ZodApp, errorSchema: z.ZodType = directErrorSchema) => {
    app.get(
      '/health',
      // Liveness answers from memory, logs nothing of its own. Its body never changes, so it is serialized once; a plain (not async) handler makes no promise.
      { schema: { tags: ['system'], summary: 'Service health and build (liveness)', response: { 200: envelopeSchema(healthData), 500: errorSchema } } },
      (_request, reply) => {
        reply.type(JSON_TYPE).send(healthBody);
      },
    );
    app.get(
      '/ready',
      {
        schema: {
          tags: ['system'],
          summary: 'Readiness: database, chain RPC, relayer gas, background loops',
          description:
            '503 when a check critical for one of this node\'s roles fails (the message names the failing checks); 200 otherwise, ' +
            'with status degraded when non-critical checks fail (docs/operations.md#readiness). Not cached.',
          response: { 200: envelopeSchema(readyData), 503: envelopeSchema(readyData) },
        },
      },
      async (_request, reply) => {
        const report = await ctx.readiness.report();
        reply.header('cache-control', 'no-store');
        if (report.status === 'ready') return reply.send(envelope(report));
        // Degraded still serves: 200, so a load balancer keeps the node, with the failing checks named.
        if (report.ready) return reply.send(envelope(report, `degraded: ${report.failing.join(', ')}`));
        // The envelope family's error shape, with the report as its data.
        return reply.code(503).send({ code: envelopeCodeFor(503), message: `not ready: ${report.failing.join(', ')}`, data: report });
      },
    );
  };
  return {
    name: 'system',
    // Counters of ended windows are dead weight; a day covers every window the service uses.
    loops: [
      { name: 'rate-limit-prune', intervalMs: 10 * 60_000, leader: true, run: async () => void (await ctx.rateLimiter.prune(86_400)) },
      { name: 'idempotency-prune', intervalMs: 10 * 60_000, leader: true, run: async () => void (await ctx.idempotency.prune()) },
    ],
    routes: {
      api: (app) => {
        health(app, envelopeErrorSchema);
        const issuer = ctx.devIdentity;
        if (issuer) {
          app.get('/dev/identity/jwks.json', { schema: { tags: ['dev'], summary: 'JWKS of the dev identity issuer', response: { 200: z.object({ keys: z.array(z.record(z.string(), z.unknown())) }), 500: directErrorSchema } } }, async () => issuer.jwks());
          // The dashboard's sign-in in embedded mode.
          if (devTokenRouteEnabled(ctx)) {
            app.post(
              '/dev/identity/token',
              {
                schema: {
                  tags: ['dev'],
                  summary: 'An identity token for any user from the dev issuer (embedded devchain only; the dashboard signs in with it)',
                  body: devTokenBody,
                  response: { 200: devTokenResult, 400: directErrorSchema, 500: directErrorSchema },
                },
              },
              async (request, reply) => {
                const expiresAt = new Date(Date.now() + DEV_TOKEN_TTL_SECONDS * 1000).toISOString();
                reply.header('cache-control', 'no-store');
                return { token: await issuer.sign(request.body.sub, DEV_TOKEN_TTL_SECONDS), sub: request.body.sub, expiresAt };
              },
            );
          }
        }
      },
      facilitator: health,
      relay: health,
      assets: health,
      worker: health,
    },
  };
}
