import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../platform/http/errors.js';
import type { Module } from '../module.js';
import { loadWebAssets } from './assets.js';

/**
 * The pages on the api origin (docs/web.md): the dashboard and explorer under /app/, and the hosted
 * checkout at each intent's paymentUrl for a browser (GET, Accept: text/html; POST stays the x402 pay
 * contract). Same origin as the API they call, so the CSP allows nothing else: no CDN, no inline code,
 * no framing. Built files are hashed: they are cached for good; the two pages are revalidated.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export function webModule(ctx: AppContext): Module {
  const assets = loadWebAssets();
  if (!assets) ctx.log.warn('web/dist is missing: /app and the checkout page answer 503 until `node bin/build.js` builds them');

  const send = (request: FastifyRequest, reply: FastifyReply, name: string) => {
    const asset = assets?.get(name);
    if (!assets) throw new ApiError(503, 'web_not_built', 'The web pages are not built; run `node bin/build.js`');
    if (!asset) throw new ApiError(404, 'not_found', 'Not found');
    reply.header('content-type', asset.type).header('x-content-type-options', 'nosniff').header('vary', 'accept-encoding');
    if (name.endsWith('.html')) reply.header('cache-control', 'no-cache').header('content-security-policy', PAGE_CSP).header('referrer-policy', 'no-referrer');
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
              description: 'Public. Answers the HTML page that reads the intent and pays it with the browser wallet through POST on this same URL. Without Accept: text/html: 406.',
              params: z.object({ intentId: z.string().min(1).max(200) }),
            },
          },
          async (request, reply) => {
            if (!acceptsHtml(request)) throw new ApiError(406, 'not_acceptable', 'GET on a paymentUrl answers the checkout page (Accept: text/html); pay with POST');
            return send(request, reply, 'checkout.html');
          },
        );
      },
    },
  };
}

const acceptsHtml = (request: FastifyRequest) => /\btext\/html\b/.test(request.headers.accept ?? '');
const gzipAccepted = (request: FastifyRequest) => /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''));

