import type { RequestHandler } from 'express';
import { ExpressAdapter, type x402HTTPResourceServer } from '@x402/express';

/**
 * Runs before the payment middleware on every request. HEAD on a paid GET path answers 405: Express
 * would run the GET handler for it, and the middleware's `GET` key does not match HEAD. A paid
 * request waits for `ready()` (the facilitator sync) and answers 503 while the facilitator is down.
 */
export function paidRouteGate(httpServer: x402HTTPResourceServer, ready: () => Promise<void>, facilitatorUrl: string): RequestHandler {
  return (req, res, next) => {
    // The same request view the payment middleware matches on.
    const context = { adapter: new ExpressAdapter(req), path: req.path, decodedPath: decode(req.path) };
    if (req.method === 'HEAD' && httpServer.requiresPayment({ ...context, method: 'GET' })) {
      res.set('Allow', 'GET').status(405).end();
      return;
    }
    if (!httpServer.requiresPayment({ ...context, method: req.method })) return next();
    ready().then(
      () => next(),
      (error: Error) => {
        console.error(`facilitator ${facilitatorUrl} not ready: ${error.message}`);
        res.set('Retry-After', '5').status(503).json({ error: 'payment facilitator unavailable, retry shortly' });
      },
    );
  };
}

/** x402 v1 header names as aliases: X-PAYMENT in, X-PAYMENT-RESPONSE out (the middleware knows only v2's). */
export const legacyHeaderAliases: RequestHandler = (req, res, next) => {
  const legacy = req.headers['x-payment'];
  if (typeof legacy === 'string' && !req.headers['payment-signature']) req.headers['payment-signature'] = legacy;
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name, value) => {
    if (name.toLowerCase() === 'payment-response') setHeader('X-PAYMENT-RESPONSE', value);
    return setHeader(name, value);
  };
  next();
};

function decode(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
