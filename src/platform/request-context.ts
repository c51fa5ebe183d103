import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactError } from './log-redaction.js';

// The request being served, as far as code deep in a service needs it. The request object carries its id
// (`request.id`, echoed as x-request-id) and the per-request hooks (src/platform/http/route-hooks.ts), the
// request's logger (`request.log`, bound to `reqId`) and the request metrics read it from there. What cannot
// reach the request object reads it from this scope (an AsyncLocalStorage): component loggers (facilitator,
// relayer, chain) and the root logger log it as `reqId`, and calls to another origin (a paid endpoint's
// facilitator over HTTP, pay-and-call's upstream, an agent's runtime) pass it on as X-Request-Id, which that
// origin adopts, so one id follows a payment across origins in the logs.
//
// The scope is entered once per request by the route's own onRequest hook, not by a hook of its own, and not
// at all on routes that declare `config: { requestContext: false }` (their work reads nothing from it).

/** What a request's scope holds: its id, and its route pattern (a bounded metrics label). */
export interface RequestScope {
  readonly id: string;
  readonly route: string | undefined;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** The id of the request this code runs for, if any. */
export const currentRequestId = (): string | undefined => storage.getStore()?.id;

/** The route (its pattern, e.g. `/v1/mpp/broadcast`) of the request this code runs for, if any: a bounded metrics label. */
export const currentRoute = (): string | undefined => storage.getStore()?.route;

/** Runs `fn` (a hook's `done`) with `scope` as the request in scope. */
export const runInRequestScope = <T>(scope: RequestScope, fn: () => T): T => storage.run(scope, fn);

/** Marks Fastify's per-request loggers, which carry the id as a binding already. */
export const REQUEST_LOGGER = Symbol('tollgate.requestLogger');

/** The process's root logger: every line written while serving a request carries its `reqId`. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    // Errors may quote RPC URLs (with their keys), request bodies and signatures: log-redaction.ts.
    serializers: { err: redactError, error: redactError },
    mixin: (_object: object, _level: number, logger: object) => {
      const id = storage.getStore()?.id;
      return id === undefined || REQUEST_LOGGER in logger ? {} : { reqId: id };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * false: the route's work needs no request id in scope (it writes no component log line and calls no
     * other origin), so it runs outside the scope. On Node 20, once any request has entered the scope, every
     * async resource of the process (promises, ticks, socket writes) pays an init hook, routes outside it too:
     * about 1 µs of GET /health's CPU (bench/RESULTS.md, bench/health); a route outside it saves the `run`.
     */
    requestContext?: boolean;
  }
}
