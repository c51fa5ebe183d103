import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
  onSendHookHandler,
  preValidationHookHandler,
  RouteHandlerMethod,
  RouteOptions,
} from 'fastify';
import { auditOnSend, type AuditLog } from '../audit.js';
import type { HttpRequestMetrics } from '../http-metrics.js';
import { decorateAnswerRecorder, recordAnswerWith } from './answer-metrics.js';
import { writeAnswerHeaders } from './cors-and-request-id.js';
import { unsafeParameters } from './json-body.js';

// What every request of every route pays beyond Fastify's own work, in as few hooks as it can be (each hook a
// route has is a call through Fastify's hook runner, and each lifecycle phase with any hook a `next` closure and
// two more):
//
// - onRequest, one hook: x-request-id and CORS (cors-and-request-id.ts); the query and path-parameter guard
//   (json-body.ts) on GET and HEAD routes, which parse no body; the route's metrics recorder put on the request.
// - preValidation, one hook, only on routes that may carry a body: the guard, after the body is parsed (as
//   before: a malformed body is refused first).
// - onSend: the audit row, only on routes whose config has `audit`.
// - No onResponse hook: the answer is counted by the route's recorder, which the request carries, when Fastify
//   reports it completed (answer-metrics.ts: MeteredLogController).
//
// A GET or HEAD route with no hooks of its own and no schema for its query, parameters or headers (GET /health,
// /ready, /metrics) has nothing that can run or refuse between onRequest and its handler, so it gets no hook at
// all: the same work runs first thing in its handler (`direct`), and the request pays no hook runner.
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
};

const BODYLESS = new Set(['GET', 'HEAD']);
/** Route options whose hooks or validation run between onRequest and the handler, and may answer first. */
const BEFORE_HANDLER = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const;
const VALIDATED_PARTS = ['querystring', 'params', 'headers', 'body'] as const;
const asArray = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** The per-request work of one route, or of the not-found handler (no route: `route` undefined, may carry a body). */
function hooksOf(deps: RouteHookDeps, route: string | undefined, options: { bodyless: boolean; ownOnRequest: boolean; audit?: Parameters<typeof auditOnSend>[1] }) {
  const { bodyless } = options;
  // The guard runs in onRequest only where nothing can come between it and preValidation, where it ran
  // before: no body, and no onRequest hook of the route's own (an authentication check still refuses first).
  const guardFirst = bodyless && !options.ownOnRequest;
  const record = deps.metrics.forRoute(route ?? 'unmatched');

  /** The onRequest work; a refusal to answer with, undefined to go on, or null when it answered a CORS preflight. */
  const begin = (request: FastifyRequest, reply: FastifyReply): Error | undefined | null => {
    recordAnswerWith(request, record);
    if (!writeAnswerHeaders(request, reply)) return null;
    return guardFirst ? unsafeParameters(request) : undefined;
  };
  const start = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const refused = begin(request, reply);
    if (refused === null) return; // a CORS preflight, answered: the hook chain stops here
    done(refused);
  };
  const guard = (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => done(unsafeParameters(request));
  /** The route's handler with the onRequest work first (a `direct` route: nothing runs between the two). */
  const direct = (handler: RouteHandlerMethod): RouteHandlerMethod =>
    function (this: FastifyInstance, request, reply) {
      const refused = begin(request, reply);
      if (refused === null) return; // not on GET or HEAD; kept so the two paths cannot drift
      if (refused !== undefined) throw refused; // Fastify hands it to the error handler, as a hook's done(error)
      return handler.call(this, request, reply);
    };

  const hooks: Hooks = {
    onRequest: [start],
    preValidation: guardFirst ? [] : [guard],
    onSend: options.audit ? [auditOnSend(deps.audit, options.audit)] : [],
  };
  return { hooks, direct };
}

/** Whether nothing of the route's own (hooks, validation) runs between onRequest and its handler, and it has no body. */
const isDirect = (route: RouteOptions, bodyless: boolean) =>
  bodyless &&
  BEFORE_HANDLER.every((phase) => asArray(route[phase]).length === 0) &&
  VALIDATED_PARTS.every((part) => route.schema?.[part] === undefined);

/**
 * Gives every route registered after this call (on this instance and its plugins) the per-request hooks
 * above, ahead of its own.
 */
export function installRouteHooks(app: FastifyInstance, deps: RouteHookDeps): void {
  decorateAnswerRecorder(app);
  const wrapped = new WeakSet<RouteHandlerMethod>();
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = asArray(route.method);
    const bodyless = methods.every((method) => BODYLESS.has(method));
    const { hooks, direct } = hooksOf(deps, route.url, {
      bodyless,
      ownOnRequest: route.onRequest !== undefined && asArray(route.onRequest).length > 0,
      audit: route.config?.audit,
    });
    if (hooks.onSend.length > 0) route.onSend = [...hooks.onSend, ...asArray(route.onSend)];
    if (isDirect(route, bodyless)) {
      // A GET's HEAD route is registered with the GET's options as the caller gave them; its own handler wraps once.
      if (!wrapped.has(route.handler)) {
        route.handler = direct(route.handler);
        wrapped.add(route.handler);
      }
      return;
    }
    // New arrays: Fastify copies a GET route's options for its HEAD route before this hook ran on them.
    route.onRequest = [...hooks.onRequest, ...asArray(route.onRequest)];
    if (hooks.preValidation.length > 0) route.preValidation = [...hooks.preValidation, ...asArray(route.preValidation)];
  });
}

/** The same hooks for the not-found handler (`setNotFoundHandler`'s options): its answers carry the id and are counted. */
export function notFoundHooks(deps: RouteHookDeps): Partial<Hooks> {
  const { onRequest, preValidation } = hooksOf(deps, undefined, { bodyless: false, ownOnRequest: false }).hooks;
  return { onRequest, preValidation };
}
