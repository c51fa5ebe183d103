import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { OidcSignIn } from '../../platform/auth/settings.js';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import type { Module } from '../module.js';
import { devTokenRouteEnabled } from '../system/routes.js';
import { loadWebAssets } from './assets.js';
import { envelopeErrorSchema, intentErrorSchema } from '../../platform/http/schemas.js';

/**
 * The pages on the api origin (docs/web.md): the dashboard and explorer under /app/, and the hosted
 * checkout at each intent's paymentUrl for a browser (GET, Accept: text/html; POST stays the x402 pay
 * contract). Same origin as the API they call, so the CSP allows nothing else: no CDN, no inline code,
 * no framing. The one exception is the dashboard's: with an OpenID provider to sign in through, it may
 * also fetch from the provider's origin (the discovery document and the token request; the redirect to
 * the provider is a top-level navigation, which CSP does not restrict). Built files are hashed: they are
 * cached for good; the two pages are revalidated.
 */
const pageCsp = (connectOrigin: string | null) =>
  [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `connect-src 'self'${connectOrigin ? ` ${connectOrigin}` : ''}`,
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');

/** How the dashboard signs in (GET /app/sign-in.json; public, it names nothing secret). */
type SignIn = { mode: 'dev' | 'token' } | ({ mode: 'oidc' } & OidcSignIn);
const signInSchema = z.union([
  z.object({ mode: z.enum(['dev', 'token']) }),
  z.object({ mode: z.literal('oidc'), issuer: z.string(), clientId: z.string(), scope: z.string(), token: z.enum(['id_token', 'access_token']) }),
]);

function signInOf(ctx: AppContext): SignIn {
  const oidc = ctx.config.identity.oidc;
  if (oidc) return { mode: 'oidc', ...oidc };
  return { mode: devTokenRouteEnabled(ctx) ? 'dev' : 'token' };
}

export function webModule(ctx: AppContext): Module {
  const assets = loadWebAssets();
  if (!assets) ctx.log.warn('web/dist is missing: /app and the checkout page answer 503 until `node bin/build.js` builds them');
  const signIn = signInOf(ctx);
  const dashboardCsp = pageCsp(signIn.mode === 'oidc' ? new URL(signIn.issuer).origin : null);
  const checkoutCsp = pageCsp(null);

  const send = (request: FastifyRequest, reply: FastifyReply, name: string, vary = 'accept-encoding') => {
    const asset = assets?.get(name);
    if (!assets) throw new ApiError(503, 'web_not_built', 'The web pages are not built; run `node bin/build.js`');
    if (!asset) throw new ApiError(404, 'not_found', 'Not found');
    reply.header('content-type', asset.type).header('x-content-type-options', 'nosniff').header('vary', vary);
    if (name.endsWith('.html')) reply.header('cache-control', 'no-cache').header('content-security-policy', name === 'app.html' ? dashboardCsp : checkoutCsp).header('referrer-policy', 'no-referrer');
    else reply.header('cache-control', 'public, max-age=31536000, immutable');
    return gzipAccepted(request) ? reply.header('content-encoding', 'gzip').send(asset.gzip) : reply.send(asset.body);
  };

  return {
    name: 'web',
    routes: {
      api: (app) => {
        const hide = { hide: true };
        app.get('/app', { schema: hide }, async (_request, reply) => reply.redirect('/app/', 301));
        app.get('/app/', { schema: hide }, async (request, reply) => send(request, reply, 'app.html'));
        // Read by the dashboard before it shows the sign-in form: which of the three ways this deployment offers.
        app.get(
          '/app/sign-in.json',
          {
            schema: {
              tags: ['web'],
              summary: 'How the dashboard signs in on this deployment: dev (the dev issuer), oidc (the OpenID provider named), or token (pasted)',
              description: 'Public: it names nothing secret (the OpenID client is a public client). docs/web.md#signing-in.',
              response: { 200: signInSchema, 500: envelopeErrorSchema },
            },
          },
          async (_request, reply) => {
            reply.header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff');
            return signIn;
          },
        );
        app.get('/app/assets/:file', { schema: { ...hide, params: z.object({ file: z.string().regex(/^[\w.-]{1,200}$/) }) } }, async (request, reply) =>
          send(request, reply, `assets/${request.params.file}`),
        );
        // The paymentUrl opened in a browser. Anything else asking GET gets told how this URL is used.
        app.get(
          '/v1/payment-intents/:intentId/pay',
          {
            schema: {
              tags: ['payment-intents'],
              summary: 'The hosted checkout page of an intent, for a browser (Accept: text/html)',
              description:
                'Public. Answers the HTML page that reads the intent and pays it with the browser wallet through POST on this same URL: 200, or 404 (the same page, ' +
                'which then says the payment request does not exist) for an unknown intent. Without Accept: text/html: 406. Every answer carries Vary: Accept.',
              params: z.object({ intentId: z.string().min(1).max(200) }),
              response: { 200: z.string().describe('the checkout page (HTML)'), 404: z.string().describe('the same page, saying the payment request does not exist'), 406: intentErrorSchema },
            },
          },
          async (request, reply) => {
            // What this URL answers depends on Accept (the page, or 406 for anything else): caches must key on it.
            if (!acceptsHtml(request)) {
              throw new ApiError(406, 'not_acceptable', 'GET on a paymentUrl answers the checkout page (Accept: text/html); pay with POST', undefined, { vary: 'accept' });
            }
            // An unknown intent still gets the page (it tells the payer the link is wrong), with the status that says so.
            if (!(await ctx.services.intents.exists(request.params.intentId))) reply.code(404);
            return send(request, reply, 'checkout.html', 'accept, accept-encoding');
          },
        );
      },
    },
  };
}

const acceptsHtml = (request: FastifyRequest) => /\btext\/html\b/.test(request.headers.accept ?? '');
const gzipAccepted = (request: FastifyRequest) => /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));

