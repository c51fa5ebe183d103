import type { FastifyInstance } from 'fastify';

// Headers browsers may send to, and read from, x402 endpoints. A page may name its own request id
// (x-request-id, adopted when well formed) and read the one each answer carries.
const REQUEST_HEADERS = 'authorization, content-type, payment-signature, x-payment, idempotency-key, x-request-id';
const EXPOSED_HEADERS = 'payment-required, payment-response, x-payment-response, x-request-id, retry-after';
const METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';

/**
 * One hook for what every answer carries: `x-request-id` always, CORS headers only when a browser
 * asks (an `Origin` header). Server-to-server calls, the bulk of this API's traffic, skip CORS work;
 * that, one hook instead of two, and a callback hook rather than an async one (no promise per request)
 * are measurable on /health.
 */
export function installCorsAndRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (request.headers.origin === undefined) return done();
    reply.header('access-control-allow-origin', '*');
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      // Answered here: the hook chain stops (done is not called).
      reply
        .code(204)
        .headers({ 'access-control-allow-methods': METHODS, 'access-control-allow-headers': REQUEST_HEADERS, 'access-control-max-age': '600' })
        .send();
      return;
    }
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    done();
  });
}
