// The request id is in scope through a route's async work (bodies too), unless the route opts out. The scope is
// entered by each route's own hooks (src/platform/http/route-hooks.ts).
import http from 'node:http';
import { setImmediate as later, setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditLog } from './audit.js';
import { HttpRequestMetrics } from './http-metrics.js';
import { installRouteHooks } from './http/route-hooks.js';
import { currentRequestId, currentRoute } from './request-context.js';

const app = Fastify({ genReqId: () => `id-${Math.random().toString(36).slice(2)}` });
installRouteHooks(app, { metrics: new HttpRequestMetrics('api', [1]), audit: {} as AuditLog });
const seen = async (request: { id: string }) => {
  await later();
  return { id: request.id, inScope: currentRequestId() ?? null, route: currentRoute() ?? null };
};
app.get('/in', seen);
app.post('/in', seen);
app.get('/out', { config: { requestContext: false } }, seen);
let base: string;
// Real HTTP: a body arrives in the socket's own async context, which is what the second entry is for.
beforeAll(async () => {
  base = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(() => app.close());

const call = async (path: string, init?: RequestInit) => (await (await fetch(`${base}${path}`, init)).json()) as { id: string; inScope: string | null; route: string | null };

describe('the request scope', () => {
  it('keeps the request id in scope across awaits, after body parsing too', async () => {
    for (const init of [{ method: 'GET' }, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) }]) {
      const body = await call('/in', init);
      expect(body.inScope, init.method).toBe(body.id);
      expect(body.route, init.method).toBe('/in');
    }
  });

  it('keeps it in scope when the body arrives after the headers', async () => {
    const answer = new Promise<{ id: string; inScope: string | null }>((resolve, reject) => {
      const request = http.request(`${base}/in`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '7' } }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve(JSON.parse(text)));
      });
      request.on('error', reject);
      request.flushHeaders();
      void sleep(50).then(() => request.end('{"a":1}'));
    });
    const body = await answer;
    expect(body.inScope).toBe(body.id);
  });

  it('leaves routes with config.requestContext false outside the scope', async () => {
    expect(await call('/out')).toMatchObject({ inScope: null, route: null });
  });
});
