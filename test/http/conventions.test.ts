import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

const logLines: string[] = [];
const log = pino(
  { level: 'error' },
  new Writable({
    write(chunk, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  }),
);

// A route that fails the way a bug would, on the envelope and the intent families.
const failing: ModuleFactory = () => ({
  name: 'failing',
  routes: {
    api: (app) => {
      app.get('/v1/boom', async () => {
        throw new Error('database password is hunter2');
      });
      app.get('/v1/payment-intents/boom', async () => {
        throw new Error('stack internals');
      });
    },
  },
});

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ factories: [...moduleFactories, failing], log });
});
afterAll(async () => {
  await app?.close();
});

describe('HTTP conventions', () => {
  it('answers /health in the envelope with build facts and a request id', async () => {
    const response = await app.origins.api!.inject({ method: 'GET', url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const body = response.json();
    expect(body).toMatchObject({ code: 0, message: 'ok' });
    for (const field of ['commit', 'branch', 'buildTime']) {
      expect(typeof body.data[field]).toBe('string');
      expect(body.data[field].length).toBeGreaterThan(0);
    }
  });

  it('serves /health on every origin over real HTTP', async () => {
    for (const url of Object.values(app.urls)) {
      const response = await fetch(`${url}/health`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { code: number }).code).toBe(0);
    }
  });

  it('keeps a well-formed incoming request id and replaces a malformed one', async () => {
    const kept = await app.origins.api!.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'trace-42' } });
    expect(kept.headers['x-request-id']).toBe('trace-42');
    const replaced = await app.origins.api!.inject({ method: 'GET', url: '/health', headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(replaced.headers['x-request-id']).not.toBe('bad id\twith spaces');
  });

  it('renders unknown routes in the family of their prefix', async () => {
    const api = app.origins.api!;
    const envelope = await api.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(envelope.statusCode).toBe(404);
    expect(envelope.json()).toMatchObject({ code: 1004, data: null });

    const intent = await api.inject({ method: 'GET', url: '/v1/payment-intents/x/nothing' });
    expect(intent.statusCode).toBe(404);
    expect(intent.json()).toMatchObject({ code: 'not_found' });

    const direct = await api.inject({ method: 'GET', url: '/x402scan/nothing/here/at/all' });
    expect(direct.statusCode).toBe(404);
    expect(direct.json()).toMatchObject({ error: { code: 'not_found' } });

    const relay = await app.origins.relay!.inject({ method: 'GET', url: '/nothing' });
    expect(relay.statusCode).toBe(404);
    expect(relay.json()).toMatchObject({ success: false, accepted: false, error: { code: 'not_found' } });

    const facilitator = await app.origins.facilitator!.inject({ method: 'GET', url: '/nothing' });
    expect(facilitator.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('maps validation failures to the envelope 400 with details in data', async () => {
    const token = await app.identityToken('alice');
    const response = await app.origins.api!.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: { authorization: `Bearer ${token}` },
      payload: { name: '' },
    });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.code).toBe(1000);
    expect(body.data).toEqual([expect.objectContaining({ in: 'body', path: '/name' })]);
  });

  it('maps malformed JSON to 400 in the family shape', async () => {
    const token = await app.identityToken('alice');
    const response = await app.origins.api!.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 1000, data: null });
  });

  it('hides internals of unexpected errors and logs them with the request id', async () => {
    const response = await app.origins.api!.inject({ method: 'GET', url: '/v1/boom' });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('hunter2');
    expect(response.json()).toEqual({ code: 1010, message: 'Internal server error', data: null });
    const requestId = response.headers['x-request-id'] as string;
    const logged = logLines.map((line) => JSON.parse(line)).find((entry) => entry.reqId === requestId);
    expect(logged?.err?.message).toContain('hunter2');

    const intent = await app.origins.api!.inject({ method: 'GET', url: '/v1/payment-intents/boom' });
    expect(intent.statusCode).toBe(500);
    expect(intent.json()).toEqual({ code: 'internal_error', message: 'Internal server error' });
  });

  it('publishes OpenAPI 3.1 with version 1.0.0 and the docs page without a CDN', async () => {
    const spec = (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(spec.openapi).toBe('3.1.0');
    expect(spec.info.version).toBe('1.0.0');
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/health', '/v1/projects']));
    const docs = await app.origins.api!.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs)/);
    const asset = await app.origins.api!.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
  });

  it('exposes the x402 headers to browsers', async () => {
    const response = await app.origins.api!.inject({
      method: 'OPTIONS',
      url: '/health',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'payment-signature' },
    });
    expect(response.headers['access-control-allow-headers']).toContain('payment-signature');
    expect(response.statusCode).toBe(204);
    const get = await app.origins.api!.inject({ method: 'GET', url: '/health', headers: { origin: 'https://shop.example' } });
    expect(get.headers['access-control-allow-origin']).toBe('*');
    expect(get.headers['access-control-expose-headers']).toContain('payment-response');
    // Server-to-server calls carry no Origin and get no CORS headers.
    const server = await app.origins.api!.inject({ method: 'GET', url: '/health' });
    expect(server.headers['access-control-allow-origin']).toBeUndefined();
    expect(server.headers['x-request-id']).toBeDefined();
  });
});
