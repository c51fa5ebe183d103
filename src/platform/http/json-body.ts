import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';
import { assertSafeJson, isSafeString, scanJsonText } from '../json-guard.js';

/**
 * Every JSON body passes the JSON guard (depth, U+0000, lone surrogates) before any route sees it;
 * an empty JSON body is no body (routes whose body is optional accept it). Query strings and path
 * parameters get the same string rule (`unsafeParameters`, run by each route's hooks: route-hooks.ts):
 * PostgreSQL text cannot hold U+0000.
 */
export function installJsonGuard(app: FastifyInstance): void {
  // Fastify's own parser (prototype-poisoning guards included) parses, between the guard's two checks.
  const parse = app.getDefaultJsonParser('error', 'error');
  const refuse = (message: string) => new ApiError(400, 'invalid_json', message);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    let suspect: boolean;
    try {
      suspect = scanJsonText(text);
    } catch (error) {
      return done(refuse((error as Error).message), undefined);
    }
    parse(request, text, (error, value) => {
      if (error) return done(refuse('Request body is not valid JSON'), undefined);
      try {
        if (suspect) assertSafeJson(value);
      } catch (problem) {
        return done(refuse((problem as Error).message), undefined);
      }
      done(null, value);
    });
  });
}

/** The refusal for the first query (then path) parameter holding U+0000 or an unpaired surrogate, if any. */
export const unsafeParameters = (request: FastifyRequest): ApiError | undefined => unsafeParameter('query', request.query) ?? unsafeParameter('params', request.params);

/** The refusal for the first parameter of one part holding U+0000 or an unpaired surrogate, if any. */
function unsafeParameter(part: 'query' | 'params', values: unknown): ApiError | undefined {
  if (values === null || typeof values !== 'object') return undefined;
  for (const name in values) {
    if (!Object.hasOwn(values, name)) continue;
    const value = (values as Record<string, unknown>)[name];
    if (Array.isArray(value) ? value.some(isUnsafe) : isUnsafe(value)) {
      return new ApiError(400, 'invalid_request', `${part} parameter ${name} must not contain U+0000 or unpaired surrogates`);
    }
  }
  return undefined;
}

const isUnsafe = (value: unknown) => typeof value === 'string' && !isSafeString(value);
