// /openapi.json and /docs made on first request: the document is the one @fastify/swagger makes when registered
// on the origin itself (as src/app.ts did before), hidden and HEAD routes left out; /docs serves the UI and its
// assets, revalidates them, and an unknown path under it gets the origin's own not-found answer.
import swagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { installApiDocs, swaggerOptions } from './api-docs.js';

/** The same routes on any instance: zod schemas (as every module's), a prefixed plugin, a hidden route. */
async function registerRoutes(app: FastifyInstance): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.get('/things/:id', {
    schema: { tags: ['things'], params: z.object({ id: z.string().uuid() }), response: { 200: z.object({ id: z.string(), n: z.number().int() }) } },
  }, async () => ({ id: 'x', n: 1 }));
  app.post('/things', { schema: { body: z.object({ name: z.string().max(10) }), security: [{ bearer: [] }] } }, async () => ({}));
  await app.register(async (scoped) => {
    scoped.delete('/items/:id', { schema: { params: z.object({ id: z.string() }) } }, async () => ({}));
  }, { prefix: '/v1' });
  app.get('/secret', { schema: { hide: true } }, async () => ({}));
}

describe('API docs made on first request', () => {
  let lazy: FastifyInstance;
  let eager: FastifyInstance;
  beforeAll(async () => {
    lazy = Fastify();
    lazy.setNotFoundHandler((request, reply) => reply.code(404).send({ code: 'not_found', url: request.url }));
    installApiDocs(lazy, { title: 'Docs test', ui: true });
    await registerRoutes(lazy);
    await lazy.ready();
    eager = Fastify();
    await eager.register(swagger, swaggerOptions('Docs test'));
    await registerRoutes(eager);
    await eager.ready();
  });
  afterAll(async () => {
    await lazy?.close();
    await eager?.close();
  });

  it('/openapi.json is the document swagger makes on the origin itself', async () => {
    const answer = await lazy.inject({ method: 'GET', url: '/openapi.json' });
    expect(answer.statusCode).toBe(200);
    const document = answer.json();
    expect(document).toEqual(JSON.parse(JSON.stringify(eager.swagger())));
    expect(Object.keys(document.paths)).toEqual(['/things/{id}', '/things', '/v1/items/{id}']);
    expect(document.paths['/things/{id}'].get.parameters[0]).toMatchObject({ name: 'id', in: 'path', schema: { format: 'uuid' } });
    // Made once: a second request answers the same document.
    expect((await lazy.inject({ method: 'GET', url: '/openapi.json' })).json()).toEqual(document);
  });

  it('/docs serves the UI and its assets from the package, and revalidates them', async () => {
    const page = await lazy.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).not.toMatch(/https?:\/\/(cdn|unpkg|cdnjs)/);
    const asset = await lazy.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.rawPayload.length).toBeGreaterThan(100_000);
    expect(asset.headers.etag).toBeTruthy();
    const again = await lazy.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js', headers: { 'if-none-match': String(asset.headers.etag) } });
    expect(again.statusCode).toBe(304);
    expect((await lazy.inject({ method: 'GET', url: '/docs/json' })).json().paths).toHaveProperty(['/things']);
    // A file answers from memory once read: the same bytes, for any query.
    const cached = await lazy.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js?v=2' });
    expect(cached.statusCode).toBe(200);
    expect(cached.rawPayload.equals(asset.rawPayload)).toBe(true);
  });

  it('HEAD on the UI and its files answers as GET would, without the body', async () => {
    const page = await lazy.inject({ method: 'HEAD', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.rawPayload.length).toBe(0);
    const get = await lazy.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
    const head = await lazy.inject({ method: 'HEAD', url: '/docs/static/swagger-ui.css' });
    expect(head.statusCode).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(get.rawPayload.length);
    expect(head.rawPayload.length).toBe(0);
  });

  it('an unknown path under /docs gets the origin’s own not-found answer', async () => {
    const answer = await lazy.inject({ method: 'GET', url: '/docs/nothing-here' });
    expect(answer.statusCode).toBe(404);
    expect(answer.json()).toEqual({ code: 'not_found', url: '/docs/nothing-here' });
  });

  it('an origin without the UI has no /docs', async () => {
    const bare = Fastify();
    installApiDocs(bare, { title: 'Bare', ui: false });
    try {
      expect((await bare.inject({ method: 'GET', url: '/docs/' })).statusCode).toBe(404);
      expect((await bare.inject({ method: 'GET', url: '/openapi.json' })).json().info).toEqual({ title: 'Bare', version: '1.0.0' });
    } finally {
      await bare.close();
    }
  });
});
