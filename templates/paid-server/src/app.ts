import cors from 'cors';
import express, { type ErrorRequestHandler, type Express, type RequestHandler } from 'express';
import { HTTPFacilitatorClient, type FacilitatorClient, type RoutesConfig } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddlewareFromHTTPServer, x402HTTPResourceServer, x402ResourceServer } from '@x402/express';
import type { Config } from './config.js';
import { legacyHeaderAliases, paidRouteGate } from './middleware.js';
import { assertRouteKeysMatch } from './route-check.js';
import { paidRoutes, registerHandlers } from './routes.js';

export interface AppOptions {
  /** Defaults to an HTTP client of `config.facilitatorUrl`. */
  facilitator?: FacilitatorClient;
  /** Defaults to the template's route table and handlers; tests swap them. */
  routes?: RoutesConfig;
  registerHandlers?: (app: Express) => void;
}

export interface PaidServerApp {
  app: Express;
  facilitator: FacilitatorClient;
  httpServer: x402HTTPResourceServer;
  /** Fetches the facilitator's supported kinds and checks the routes against them (memoized until it fails). */
  ready(): Promise<void>;
}

/** Builds the app; throws RouteMismatchError before any request can be served unpaid. */
export function createApp(config: Config, options: AppOptions = {}): PaidServerApp {
  const facilitator = options.facilitator ?? new HTTPFacilitatorClient({ url: config.facilitatorUrl });
  const routes = options.routes ?? paidRoutes(config);
  const resourceServer = new x402ResourceServer(facilitator).register(config.terms.network, new ExactEvmScheme());
  const httpServer = new x402HTTPResourceServer(resourceServer, routes);

  const app = express();
  app.disable('x-powered-by');
  app.use(
    cors({
      origin: config.corsOrigin,
      // Browsers may only read and send the x402 headers when CORS names them.
      exposedHeaders: ['PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-PAYMENT-RESPONSE'],
      allowedHeaders: ['Content-Type', 'PAYMENT-SIGNATURE', 'X-PAYMENT'],
    }),
  );
  // Initialized on the first paid request (or by ready()), retried after a failure, so the seller
  // can start before the facilitator does.
  let initialized: Promise<void> | null = null;
  const ready = () =>
    (initialized ??= httpServer.initialize().catch((error) => {
      initialized = null;
      throw error;
    }));
  app.use(paidRouteGate(httpServer, ready, config.facilitatorUrl));
  app.use(legacyHeaderAliases);
  // Mounted now (it must precede the handlers), created only after the route check passes, so a
  // refused app never starts talking to the facilitator.
  let payment: RequestHandler | undefined;
  app.use((req, res, next) => payment!(req, res, next));
  (options.registerHandlers ?? registerHandlers)(app);
  app.use((_req, res) => {
    res.status(404).json({ error: 'not found' });
  });
  app.use(((error, _req, res, _next) => {
    console.error(error);
    res.status(500).json({ error: 'internal error' });
  }) as ErrorRequestHandler);

  const keys = 'accepts' in routes ? ['*'] : Object.keys(routes);
  assertRouteKeysMatch(app, keys);
  payment = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false); // initialized above
  return { app, facilitator, httpServer, ready };
}
