import type { FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactError } from './log-redaction.js';

// The request being served, as far as a service call made for it needs it. The request object carries it:
// `request.id` (echoed as x-request-id, adopted when the caller's is well formed), `request.log` (bound to
// `reqId`) and the route pattern. A route handler that calls a service which logs, meters or calls another
// origin passes it down explicitly as a `Caller` (callerOf): the facilitator logs its answers with the `reqId`,
// the gas metric labels a settle with the route, and calls to another origin (a paid endpoint's facilitator over
// HTTP, pay-and-call's upstream, an agent's runtime) pass the id on as X-Request-Id, which that origin adopts,
// so one id follows a payment across origins in the logs.
//
// No AsyncLocalStorage: on Node 20, once any request enters one, every async resource of the process pays an
// init hook (9–13 % of GET /health's CPU, bench/RESULTS.md, bench/health).

/** The request a service call is made for; every field optional: a background loop has none. */
export interface Caller {
  /** The request's id (`request.id`): logged as `reqId`, sent to other origins as X-Request-Id. */
  readonly requestId?: string;
  /** The route's pattern (e.g. `/v1/mpp/broadcast`): a bounded metrics label. */
  readonly route?: string;
}

/** The caller of a service call made while serving `request`. Reads `routeOptions` (an object per read): once per call. */
export const callerOf = (request: FastifyRequest): Caller => ({ requestId: request.id, route: request.routeOptions.url });

/** X-Request-Id for a call to another origin, or nothing outside a request. */
export const requestIdHeader = (caller: Caller | undefined): Record<string, string> =>
  caller?.requestId === undefined ? {} : { 'x-request-id': caller.requestId };

/** The process's root logger. A request's lines carry `reqId` through `request.log`'s binding. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  // Errors may quote RPC URLs (with their keys), request bodies and signatures: log-redaction.ts.
  const options = { level, serializers: { err: redactError, error: redactError } };
  return destination ? pino(options, destination) : pino(options);
}
