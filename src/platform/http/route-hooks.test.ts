// Each route's per-request hooks: one per phase, ahead of the route's own, in the order the instance-wide hooks
// they replaced ran; the not-found handler gets them too; a GET's HEAD route gets them once. A GET with no hooks
// or request schema of its own (`/open/:id`) gets the same work first thing in its handler instead.
import Fastify, { type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditLog } from '../audit.js';
import { MeteredLogController } from './answer-metrics.js';
import { HttpRequestMetrics } from '../http-metrics.js';
import { callerOf } from '../request-context.js';
import { installErrorHandling } from './error-handler.js';
import { ApiError } from './errors.js';
import { installJsonGuard } from './json-body.js';
import { installRouteHooks, notFoundHooks } from './route-hooks.js';

const metrics = new HttpRequestMetrics('api', [1]);
const deps = { metrics, audit: {} as AuditLog };
// As src/app.ts builds it: a logger (so Fastify reports every completed answer) and the controller that counts them.
const app = Fastify({
  loggerInstance: pino({ level: 'silent' }) as FastifyBaseLogger,
  logController: new MeteredLogController({ disableRequestLogging: true }),
  genReqId: (request) => String(request.headers['x-request-id'] ?? `id-${Math.random()}`),
});
installRouteHooks(app, deps);
installErrorHandling(app, 'api', notFoundHooks(deps));
installJsonGuard(app);
const signedIn = (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) =>
  done(request.headers.authorization ? undefined : new ApiError(401, 'unauthorized', 'sign in'));
app.get('/open/:id', async (request) => ({ id: (request.params as { id: string }).id, caller: callerOf(request) }));
app.get('/closed/:id', { onRequest: signedIn }, async () => ({ ok: true }));
app.get('/broken', () => {
  throw new Error('boom');
});
app.post('/echo/:id', async (request) => ({ body: request.body, caller: callerOf(request) }));

beforeAll(() => app.ready());
afterAll(() => app.close());

const count = (route: string, method: string, status: number) =>
  Number(metrics.text().match(new RegExp(`^tollgate_http_requests_total\\{origin="api",method="${method}",route="${route.replace(/\//g, '\\/')}",status="${status}"\\} (\\d+)$`, 'm'))?.[1] ?? 0);

describe('route hooks', () => {
  it('answer with the request id, hand the handler its caller (id and route pattern), and count the route once', async () => {
    const answer = await app.inject({ method: 'GET', url: '/open/a', headers: { 'x-request-id': 'trace-1' } });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['x-request-id']).toBe('trace-1');
    expect(answer.json()).toEqual({ id: 'a', caller: { requestId: 'trace-1', route: '/open/:id' } });
    const posted = await app.inject({ method: 'POST', url: '/echo/b', payload: { a: 1 }, headers: { 'x-request-id': 'trace-2' } });
    expect(posted.json()).toEqual({ body: { a: 1 }, caller: { requestId: 'trace-2', route: '/echo/:id' } });
    expect(count('/open/:id', 'GET', 200)).toBe(1);
    expect(count('/echo/:id', 'POST', 200)).toBe(1);
  });

  it("give a GET's HEAD route the same hooks, once", async () => {
    const answer = await app.inject({ method: 'HEAD', url: '/open/a' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['x-request-id']).toBeTypeOf('string');
    expect(count('/open/:id', 'HEAD', 200)).toBe(1);
  });

  it('refuse a bad parameter, after the route\'s own onRequest hook and after a malformed body', async () => {
    expect((await app.inject({ method: 'GET', url: '/open/%00' })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: '/open/a?q=%00' })).statusCode).toBe(400);
    // Authentication still refuses first, as when the guard was an instance-wide preValidation hook.
    expect((await app.inject({ method: 'GET', url: '/closed/%00' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/closed/%00', headers: { authorization: 'x' } })).statusCode).toBe(400);
    const both = await app.inject({ method: 'POST', url: '/echo/%00', headers: { 'content-type': 'application/json' }, payload: '{"a":' });
    expect(both.json().message).toBe('Request body is not valid JSON');
  });

  it('give a route without hooks of its own the same work in its handler: the id, CORS, and the id on its errors', async () => {
    const answer = await app.inject({ method: 'GET', url: '/open/c', headers: { origin: 'https://shop.example' } });
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    expect(answer.headers['x-request-id']).toBeTypeOf('string');
    const failed = await app.inject({ method: 'GET', url: '/broken', headers: { 'x-request-id': 'trace-3' } });
    expect(failed.statusCode).toBe(500);
    expect(failed.headers['x-request-id']).toBe('trace-3');
    expect(count('/broken', 'GET', 500)).toBe(1);
  });

  it('answer a CORS preflight and stop', async () => {
    const answer = await app.inject({ method: 'OPTIONS', url: '/echo/b', headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST' } });
    expect(answer.statusCode).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    expect(answer.headers['x-request-id']).toBeTypeOf('string');
  });

  it('give the not-found handler the request id and count it as unmatched', async () => {
    const before = count('unmatched', 'GET', 404);
    const answer = await app.inject({ method: 'GET', url: '/nowhere' });
    expect(answer.statusCode).toBe(404);
    expect(answer.headers['x-request-id']).toBeTypeOf('string');
    expect(count('unmatched', 'GET', 404)).toBe(before + 1);
  });
});
