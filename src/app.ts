import Fastify, { type FastifyBaseLogger } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ListenerName } from './platform/server-settings.js';
import type { AppContext } from './context.js';
import { MeteredLogController } from './platform/http/answer-metrics.js';
import { installApiDocs } from './platform/http/api-docs.js';
import { frameworkErrors, installErrorHandling } from './platform/http/error-handler.js';
import { installJsonGuard } from './platform/http/json-body.js';
import { lazyLogger } from './platform/http/lazy-logger.js';
import { requestIdMaker } from './platform/http/request-ids.js';
import { installRouteHooks, notFoundHooks } from './platform/http/route-hooks.js';
import { METRICS_CONTENT_TYPE, primaryOrigin } from './platform/metrics.js';
import type { Module, ModuleFactory, ZodApp } from './modules/module.js';

const ORIGIN_TITLES: Record<ListenerName, string> = {
  api: 'Tollgate API',
  facilitator: 'Tollgate x402 facilitator',
  relay: 'Tollgate payment relay',
  assets: 'Tollgate assets gateway',
  worker: 'Tollgate worker (health, readiness, metrics)',
};

const REQUEST_ID = /^[\w.:-]{1,128}$/;
/** One maker for the process (every origin): its ids share one random prefix (request-ids.ts). */
const newRequestId = requestIdMaker();

export async function instantiateModules(ctx: AppContext, factories: ModuleFactory[]): Promise<Module[]> {
  const modules: Module[] = [];
  for (const factory of factories) modules.push(await factory(ctx));
  return modules;
}

/** Builds the Fastify instance of one origin with the house conventions and the modules' routes. */
export async function buildOrigin(ctx: AppContext, origin: ListenerName, modules: Module[]): Promise<ZodApp> {
  const verbose = ctx.config.logLevel === 'debug' || ctx.config.logLevel === 'trace';
  const app = Fastify({
    // Lazy: a request's child logger is made only if it writes (lazy-logger.ts).
    loggerInstance: lazyLogger(ctx.log.child({ origin }) as FastifyBaseLogger),
    // Also counts each answer in the request metrics (answer-metrics.ts); Fastify calls it because it has a logger.
    logController: new MeteredLogController({ disableRequestLogging: !verbose }),
    // Only behind a known proxy may X-Forwarded-For name the client (rate limits key on it).
    trustProxy: ctx.config.trustProxy,
    frameworkErrors: frameworkErrors(origin),
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newRequestId();
    },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Response schemas document the API (OpenAPI); bodies are built from explicit view functions,
  // so re-validating every response with zod would only cost time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.decorateRequest('principal', null);
  // Every route's per-request work (x-request-id, CORS, the parameter guard, audit rows,
  // request metrics) in one hook per lifecycle phase, given to each route as it is registered.
  const routeHooks = { metrics: ctx.metrics.http(origin), audit: ctx.audit };
  installRouteHooks(app, routeHooks);
  installErrorHandling(app, origin, notFoundHooks(routeHooks));
  installJsonGuard(app);

  // /openapi.json, and /docs on the api origin (assets from the installed package: no CDN), made on first request.
  installApiDocs(app, { title: ORIGIN_TITLES[origin], ui: origin === 'api' });

  for (const module of modules) {
    const register = module.routes?.[origin];
    if (register) await register(app);
  }
  installMetrics(app, ctx, origin);
  await app.ready();
  return app;
}

/**
 * `GET /metrics` (Prometheus text): this origin's request series (counted as each answer completes, with the recorder its
 * route's hooks put on the request: src/platform/http/answer-metrics.ts), plus the process-wide ones on the primary origin (src/platform/metrics.ts).
 */
function installMetrics(app: ZodApp, ctx: AppContext, origin: ListenerName): void {
  const scrape = ctx.metrics.scraper(origin, origin === primaryOrigin(ctx.roles));
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(METRICS_CONTENT_TYPE);
    return scrape();
  });
}
