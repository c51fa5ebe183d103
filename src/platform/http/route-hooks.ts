import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
  onResponseHookHandler,
  onSendHookHandler,
  preValidationHookHandler,
  RouteOptions,
} from 'fastify';
import { auditOnSend, type AuditLog } from '../audit.js';
import type { HttpRequestMetrics } from '../http-metrics.js';
import { writeAnswerHeaders } from './cors-and-request-id.js';
import { unsafeParameters } from './json-body.js';

// What every request of every route pays beyond Fastify's own work, in as few hooks as it can be (each hook a
// route has is a call through Fastify's hook runner, and each lifecycle phase with any hook a `next` closure):
//
// - onRequest, one hook: x-request-id and CORS (cors-and-request-id.ts); the query and path-parameter guard
//   (json-body.ts) on GET and HEAD routes, which parse no body.
// - preValidation, one hook, only on routes that may carry a body: the guard, after the body is parsed (as
//   before: a malformed body is refused first).
// - onSend: the audit row, only on routes whose config has `audit`.
// - onResponse, one hook: the request metrics, through the route's own recorder (no lookup of the route,
//   no object made per request).
//
// Each route gets its own hooks when it is registered (an onRoute hook), ahead of the route's own hooks, in
// the order the instance-wide hooks they replace ran. Per-route data (the route pattern, its audit) is read
// then, not per request: `request.routeOptions` builds a new object on every read.
// The not-found handler gets the same hooks (`notFoundHooks`), its route pattern being `unmatched`.

export interface RouteHookDeps {
  metrics: HttpRequestMetrics;
  audit: AuditLog;
}

type Hooks = {
  onRequest: onRequestHookHandler[];
  preValidation: preValidationHookHandler[];
  onSend: onSendHookHandler[];
  onResponse: onResponseHookHandler[];
};

const BODYLESS = new Set(['GET', 'HEAD']);
const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The hooks of one route, or of the not-found handler (no route: `route` undefined, may carry a body). */
function hooksOf(deps: RouteHookDeps, route: string | undefined, options: { bodyless: boolean; ownOnRequest: boolean; audit?: Parameters<typeof auditOnSend>[1] }): Hooks {
  const { bodyless } = options;
  // The guard runs in onRequest only where nothing can come between it and preValidation, where it ran
  // before: no body, and no onRequest hook of the route's own (an authentication check still refuses first).
  const guardFirst = bodyless && !options.ownOnRequest;
  const record = deps.metrics.forRoute(route ?? 'unmatched');

  const start = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    if (!writeAnswerHeaders(request, reply)) return; // a CORS preflight, answered
    if (guardFirst) {
      const refused = unsafeParameters(request);
      if (refused !== undefined) return done(refused);
    }
    done();
  };
  const guard = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => done(unsafeParameters(request));
  const finish = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    record(request.method, reply.statusCode, reply.elapsedTime);
    done();
  };

  return {
    onRequest: [start],
    preValidation: guardFirst ? [] : [guard],
    onSend: options.audit ? [auditOnSend(deps.audit, options.audit)] : [],
    onResponse: [finish],
  };
}

/**
 * Gives every route registered after this call (on this instance and its plugins) the per-request hooks
 * above, ahead of its own.
 */
export function installRouteHooks(app: FastifyInstance, deps: RouteHookDeps): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = asArray(route.method);
    const hooks = hooksOf(deps, route.url, {
      bodyless: methods.every((method) => BODYLESS.has(method)),
      ownOnRequest: route.onRequest !== undefined && asArray(route.onRequest).length > 0,
      audit: route.config?.audit,
    });
    // New arrays: Fastify copies a GET route's options for its HEAD route before this hook ran on them.
    route.onRequest = [...hooks.onRequest, ...asArray(route.onRequest)];
    if (hooks.preValidation.length > 0) route.preValidation = [...hooks.preValidation, ...asArray(route.preValidation)];
    if (hooks.onSend.length > 0) route.onSend = [...hooks.onSend, ...asArray(route.onSend)];
    route.onResponse = [...hooks.onResponse, ...asArray(route.onResponse)];
  });
}

/** The same hooks for the not-found handler (`setNotFoundHandler`'s options): its answers carry the id and are counted. */
export function notFoundHooks(deps: RouteHookDeps): Partial<Hooks> {
  const { onRequest, preValidation, onResponse } = hooksOf(deps, undefined, { bodyless: false, ownOnRequest: false });
  return { onRequest, preValidation, onResponse };
}
