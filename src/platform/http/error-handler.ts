import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ListenerName } from '../server-settings.js';
import { ApiError } from './errors.js';
import { familyOf, type Family } from './families.js';
import { errorBody } from './render.js';

interface Problem {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  headers?: Record<string, string>;
}

// Families whose spec closes the set of codes: a shared condition speaks their word.
const FAMILY_CODES: Partial<Record<Family, Record<string, string>>> = {
  intent: { invalid_json: 'invalid_request' },
  relay: { internal_error: 'internal_relay_error' },
};

const sender = (origin: ListenerName) => (request: FastifyRequest, reply: FastifyReply, problem: Problem) => {
  const family = familyOf(origin, request.url);
  const code = FAMILY_CODES[family]?.[problem.code] ?? problem.code;
  if (problem.headers) reply.headers(problem.headers);
  return reply.code(problem.status).send(errorBody(family, problem.status, code, problem.message, problem.details));
};

/**
 * Fastify's `frameworkErrors` option: the router's own refusals (a path parameter over the length
 * limit, a malformed percent-encoding) come before any hook, so they get the request id here.
 */
export function frameworkErrors(origin: ListenerName) {
  const send = sender(origin);
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    reply.header('x-request-id', request.id);
    if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      return send(request, reply, { status: 414, code: 'uri_too_long', message: 'A path parameter is longer than any id this API issues' });
    }
    return send(request, reply, { status: 400, code: 'invalid_request', message: 'The request URL is malformed' });
  };
}

/**
 * Installs the error and not-found handlers that render every failure in its family's shape. `notFoundHooks`:
 * the per-request hooks every route has (route-hooks.ts), for the not-found handler's answers.
 */
export function installErrorHandling(app: FastifyInstance, origin: ListenerName, notFoundHooks: object = {}): void {
  const send = sender(origin);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblem(error);
    if (problem.status >= 500 && error instanceof ApiError && EXPECTED_UNAVAILABLE.has(problem.status)) {
      // An answer the route chose (an upstream that failed, a part not available now): expected, and its cause is
      // in its code and message. A warning without a stack; a bug (500, or anything thrown that is not an ApiError)
      // stays an error with its stack.
      request.log.warn({ reqId: request.id, status: problem.status, code: problem.code, detail: problem.message }, `request answered ${problem.status}`);
    } else if (problem.status >= 500) {
      // Internals go to the log with the request id; the client gets only the id.
      request.log.error({ err: error, reqId: request.id }, 'request failed');
    }
    return send(request, reply, problem);
  });

  // Fastify gives the not-found handler any lifecycle hook named in its options; its types name two.
  app.setNotFoundHandler(notFoundHooks as Parameters<FastifyInstance['setNotFoundHandler']>[0], (request, reply) =>
    send(request, reply, { status: 404, code: 'not_found', message: `No route for ${request.method} ${request.url.split('?')[0]}` }),
  );
}

/** 502, 503 and 504 thrown as ApiErrors: the route's own answer that a part it needs is down or slow, not a bug. */
const EXPECTED_UNAVAILABLE = new Set([502, 503, 504]);

function toProblem(error: FastifyError): Problem {
  if (error instanceof ApiError) {
    return { status: error.status, code: error.code, message: error.message, details: error.details, headers: error.headers };
  }
  if (error.validation) {
    return {
      status: 400,
      code: 'invalid_request',
      message: 'Request validation failed',
      details: error.validation.map((issue) => ({
        in: error.validationContext ?? 'body',
        path: issue.instancePath || '/',
        message: issue.message ?? 'invalid',
      })),
    };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, code: 'invalid_json', message: 'Request body is not valid JSON' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'request_too_large', message: 'Request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'unsupported_media_type', message: 'Unsupported content type' };
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return { status: error.statusCode, code: 'invalid_request', message: error.message };
  }
  return { status: 500, code: 'internal_error', message: 'Internal server error' };
}
