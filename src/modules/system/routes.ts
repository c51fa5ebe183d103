import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { envelopeSchema } from '../../platform/http/schemas.js';
import { envelope } from '../../platform/http/render.js';
import type { Module, ZodApp } from '../module.js';

const healthData = z.object({ commit: z.string(), branch: z.string(), buildTime: z.string() });

/** Health on every origin, the dev identity JWKS when the embedded issuer runs, rate-limit upkeep. */
export function systemModule(ctx: AppContext): Module {
  const health = (app: ZodApp) => {
    app.get(
      '/health',
      { schema: { tags: ['system'], summary: 'Service health and build', response: { 200: envelopeSchema(healthData) } } },
      async () => envelope(ctx.build),
    );
  };
  return {
    name: 'system',
    // Counters of ended windows are dead weight; a day covers every window the service uses.
    loops: [{ name: 'rate-limit-prune', intervalMs: 10 * 60_000, leader: true, run: async () => void (await ctx.rateLimiter.prune(86_400)) }],
    routes: {
      api: (app) => {
        health(app);
        const issuer = ctx.devIdentity;
        if (issuer) {
          app.get('/dev/identity/jwks.json', { schema: { tags: ['dev'], summary: 'JWKS of the dev identity issuer' } }, async () => issuer.jwks());
        }
      },
      facilitator: health,
      relay: health,
      assets: health,
    },
  };
}
