// Expected 502/503/504 answers (an upstream that failed, a part not available now) are warnings without a stack;
// a bug (500, anything thrown that is not an ApiError) stays an error with its stack (issue 48 item 6).
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { ApiError } from '../../src/platform/http/errors.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

const lines: Array<Record<string, unknown>> = [];
const log = pino({ level: 'info' }, new Writable({ write: (chunk, _encoding, done) => (lines.push(JSON.parse(chunk.toString())), done()) }));

const failing: ModuleFactory = () => ({
  name: 'failing',
  routes: {
    api: (app) => {
      app.get('/v1/upstream-down', async () => {
        throw new ApiError(502, 'upstream_failed', 'The upstream answered 500');
      });
      app.get('/v1/not-now', async () => {
        throw new ApiError(503, 'facilitator_unavailable', 'The facilitator did not answer');
      });
      app.get('/v1/bug', async () => {
        throw new Error('undefined is not a function');
      });
    },
  },
});

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ factories: [...moduleFactories, failing], log });
});
afterAll(async () => app?.close());

const lineOf = (requestId: string) => lines.find((line) => line.reqId === requestId && (line.level as number) >= 40);

describe('logging of 5xx answers', () => {
  it('502 and 503 thrown by a route: one warning, with status and code, no stack', async () => {
    for (const [url, status, code] of [['/v1/upstream-down', 502, 'upstream_failed'], ['/v1/not-now', 503, 'facilitator_unavailable']] as const) {
      const response = await app.origins.api!.inject({ method: 'GET', url, headers: { 'x-request-id': `req-${status}` } });
      expect(response.statusCode).toBe(status);
      const line = lineOf(`req-${status}`)!;
      expect(line).toMatchObject({ level: 40, status, code, msg: `request answered ${status}` });
      expect(JSON.stringify(line)).not.toContain('"stack"');
    }
  });

  it('a bug: an error with its stack, as before', async () => {
    const response = await app.origins.api!.inject({ method: 'GET', url: '/v1/bug', headers: { 'x-request-id': 'req-bug' } });
    expect(response.statusCode).toBe(500);
    const line = lineOf('req-bug') as { level: number; err: { stack: string } };
    expect(line.level).toBe(50);
    expect(line.err.stack).toContain('undefined is not a function');
  });
});
