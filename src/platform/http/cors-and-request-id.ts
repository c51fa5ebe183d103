import type { FastifyReply, FastifyRequest } from 'fastify';

// Headers browsers may send to, and read from, x402 endpoints. A page may name its own request id
// (x-request-id, adopted when well formed) and read the one each answer carries.
const REQUEST_HEADERS = 'authorization, content-type, payment-signature, x-payment, idempotency-key, x-request-id';
const EXPOSED_HEADERS = 'payment-required, payment-response, x-payment-response, x-request-id, retry-after, idempotent-replayed';
const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';

/**
 * What every answer carries: `x-request-id` always, CORS headers only when a browser asks (an `Origin`
 * header). Server-to-server calls, the bulk of this API's traffic, skip CORS work. Called first by each
 * route's one onRequest hook (route-hooks.ts). Returns false when it answered a CORS preflight itself: the
 * hook chain must stop there.
 */
export function writeAnswerHeaders(request: FastifyRequest, reply: FastifyReply): boolean {
  reply.header('x-request-id', request.id);
  if (request.headers.origin === undefined) return true;
  reply.header('access-control-allow-origin', '*');
  if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
    reply
      .code(204)
      .headers({ 'access-control-allow-methods': METHODS, 'access-control-allow-headers': REQUEST_HEADERS, 'access-control-max-age': '600' })
      .send();
    return false;
  }
  reply.header('access-control-expose-headers', EXPOSED_HEADERS);
  return true;
}
