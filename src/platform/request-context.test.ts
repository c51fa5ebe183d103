// A request's context travels on the request object (callerOf), after body parsing too, and the process's
// loggers add nothing of their own: a request's lines carry `reqId` through `request.log`, once.
import http from 'node:http';
import { Writable } from 'node:stream';
import { setImmediate as later, setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyBaseLogger, type FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditLog } from './audit.js';
import { HttpRequestMetrics } from './http-metrics.js';
import { installRouteHooks } from './http/route-hooks.js';
import { callerOf, createLogger, requestIdHeader } from './request-context.js';

const lines: Record<string, unknown>[] = [];
const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(...String(chunk).split('\n').filter(Boolean).map((line) => JSON.parse(line))), done()) });
const root = createLogger('info', sink);
const app = Fastify({ loggerInstance: root as FastifyBaseLogger, genReqId: () => `id-${Math.random().toString(36).slice(2)}` });
installRouteHooks(app, { metrics: new HttpRequestMetrics('api', [1]), audit: {} as AuditLog });
const seen = async (request: FastifyRequest) => {
  await later();
  request.log.info('handled');
  root.info({ component: 'engine' }, 'outside the request logger');
  return { id: request.id, caller: callerOf(request) };
};
app.get('/in/:x', seen);
app.post('/in/:x', seen);
let base: string;
// Real HTTP: a body arrives in the socket's own async context.
beforeAll(async () => {
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

type Seen = { id: string; caller: { requestId: string; route: string } };
const call = async (path: string, init?: RequestInit) => (await (await fetch(`${base}${path}`, init)).json()) as Seen;

describe('the request context', () => {
  it("is the request's id and route pattern, with or without a body", async () => {
    for (const init of [{ method: 'GET' }, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) }]) {
      const body = await call('/in/1', init);
      expect(body.caller, init.method).toEqual({ requestId: body.id, route: '/in/:x' });
    }
  });

  it('is the same when the body arrives after the headers', async () => {
    const body = await new Promise<Seen>((resolve, reject) => {
      const request = http.request(`${base}/in/2`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '7' } }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve(JSON.parse(text)));
      });
      request.on('error', reject);
      request.flushHeaders();
      void sleep(50).then(() => request.end('{"a":1}'));
    });
    expect(body.caller).toEqual({ requestId: body.id, route: '/in/:x' });
  });

  it("is logged as reqId once by the request's logger, and by no other logger", async () => {
    lines.length = 0;
    const { id } = await call('/in/3');
    expect(lines.filter((line) => line.msg === 'handled')).toEqual([expect.objectContaining({ reqId: id })]);
    expect(lines.find((line) => line.msg === 'outside the request logger')).not.toHaveProperty('reqId');
  });

  it('is passed to another origin as X-Request-Id only when there is one', () => {
    expect(requestIdHeader({ requestId: 'trace-1', route: '/x' })).toEqual({ 'x-request-id': 'trace-1' });
    expect(requestIdHeader(undefined)).toEqual({});
    expect(requestIdHeader({})).toEqual({});
  });
});
