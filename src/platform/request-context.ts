import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactError } from './log-redaction.js';

// The id of the request being served, wherever its work goes: component loggers (facilitator, relayer,
// chain) log it, and calls to another origin (a paid endpoint's facilitator over HTTP) pass it on as
// X-Request-Id, which that origin adopts, so one id follows a payment across origins in the logs.

const storage = new AsyncLocalStorage<string>();

/** The id of the request this code runs for, if any. */
export const currentRequestId = (): string | undefined => storage.getStore();

/** Marks Fastify's per-request loggers, which carry the id as a binding already. */
export const REQUEST_LOGGER = Symbol('tollgate.requestLogger');

/** The process's root logger: every line written while serving a request carries its `reqId`. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    // Errors may quote RPC URLs (with their keys), request bodies and signatures: log-redaction.ts.
    serializers: { err: redactError, error: redactError },
    mixin: (_object: object, _level: number, logger: object) => {
      const id = storage.getStore();
      return id === undefined || REQUEST_LOGGER in logger ? {} : { reqId: id };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * false: the route's work needs no request id in scope (it writes no component log line and calls no
     * other origin), so it runs outside the scope. The scope costs every async step of a request (Node 20's
     * AsyncLocalStorage propagates through async hooks): about 8 % of GET /health's CPU (bench/RESULTS.md).
     */
    requestContext?: boolean;
  }
}

/**
 * Runs each request's hooks and handler with its id in scope. Entered twice: body parsing reads the
 * socket's events outside the onRequest scope, so preValidation enters it again for the handler.
 * Routes with `config: { requestContext: false }` skip it.
 */
export function installRequestContext(app: FastifyInstance): void {
  const enter = (request: FastifyRequest, _reply: FastifyReply, done: () => void) =>
    request.routeOptions.config?.requestContext === false ? done() : storage.run(request.id, done);
  app.addHook('onRequest', enter);
  app.addHook('preValidation', enter);
}
