import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type RouteOptions } from 'fastify';
import type { SwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform, validatorCompiler } from 'fastify-type-provider-zod';

// GET /openapi.json (and /docs on the api origin), built on first request. @fastify/swagger and its UI load the
// yaml parser, a JSON-schema resolver and a static-file server: a quarter of a second of CPU at every start on
// PostgreSQL (bench/RESULTS.md), and most starts (a restart after a crash, a worker, a test) never serve a
// document. So the origin only records its routes as they are registered; the first request replays them
// (method, URL, schema) into a Fastify instance of its own where swagger makes the same document.
// No handler ever runs there; /docs is answered by injecting the request into it.

export interface ApiDocsOptions {
  title: string;
  /** Serve the Swagger UI at /docs (its assets from the installed package: no CDN). */
  ui: boolean;
}

/** The hop-by-hop and length headers of an injected answer are the outer answer's own business (a HEAD's length aside). */
const NOT_COPIED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'date']);

/** What the request asks of the document or asset (its type, and whether the client's copy is still current). */
function forwarded(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ['accept', 'if-none-match', 'if-modified-since']) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

type Answer = Awaited<ReturnType<FastifyInstance['inject']>>;
const CACHED_FILES = 24;

/** Call before any documented route is registered: routes registered earlier are not in the document. */
export function installApiDocs(app: FastifyInstance, options: ApiDocsOptions): void {
  const routes: RouteOptions[] = [];
  // As swagger itself does: HEAD routes (made for each GET) and hidden ones are left out, and the route options are
  // read when the document is made. Shared schemas (addSchema, $ref) are not carried over: jsonSchemaTransform
  // takes zod schemas only, so no origin has any.
  app.addHook('onRoute', (route) => {
    if (route.method !== 'HEAD' && !(route.schema as { hide?: boolean } | undefined)?.hide) routes.push(route);
  });
  // Made once: a build that failed is not retried per request (it would fail the same way, at a build's cost).
  let built: Promise<FastifyInstance> | null = null;
  const documenter = () => (built ??= buildDocumenter(routes, options));
  app.addHook('onClose', async () => {
    await (await built?.catch(() => null))?.close();
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => (await documenter()).swagger());
  if (!options.ui) return;
  // The UI's files, once read, answer from memory: a file is not buffered again per request (@fastify/static
  // streamed it). Keyed by path, so a query cannot grow the cache, and capped, since other spellings of a path
  // (`/docs/static/./x.css`) could: the package has 12 files, 2.3 MB.
  const files = new Map<string, Answer>();
  const ui = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    const conditional = Boolean(request.headers['if-none-match'] || request.headers['if-modified-since']);
    let answer = conditional ? undefined : files.get(path);
    if (!answer) {
      answer = await (await documenter()).inject({ method: 'GET', url: request.url, headers: forwarded(request) });
      if (!conditional && answer.statusCode === 200 && path.startsWith('/docs/static/') && files.size < CACHED_FILES) files.set(path, answer);
    }
    // Its not-found and error answers are the origin's own, in the house's shapes.
    if (answer.statusCode === 404) return reply.callNotFound();
    if (answer.statusCode >= 500) throw new Error(`API docs: ${request.url} answered ${answer.statusCode}: ${answer.body.slice(0, 200)}`);
    for (const [name, value] of Object.entries(answer.headers)) if (!NOT_COPIED.has(name) && value !== undefined) reply.header(name, value);
    if (request.method === 'HEAD') reply.header('content-length', answer.rawPayload.length);
    return reply.code(answer.statusCode).send(answer.rawPayload.length > 0 ? answer.rawPayload : undefined);
  };
  app.get('/docs', { schema: { hide: true } }, ui);
  app.get('/docs/*', { schema: { hide: true } }, ui);
}

/** What every origin's document says of itself; its paths come from the routes (zod schemas through jsonSchemaTransform). */
export function swaggerOptions(title: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: { title, version: '1.0.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
    transform: jsonSchemaTransform,
  };
}

async function buildDocumenter(routes: RouteOptions[], options: ApiDocsOptions): Promise<FastifyInstance> {
  const [{ default: swagger }, { default: swaggerUi }] = await Promise.all([
    import('@fastify/swagger'),
    options.ui ? import('@fastify/swagger-ui') : Promise.resolve({ default: null }),
  ]);
  const documenter = Fastify();
  documenter.setValidatorCompiler(validatorCompiler);
  documenter.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await documenter.register(swagger, swaggerOptions(options.title));
  if (swaggerUi) await documenter.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/openapi.json' } });
  const neverCalled = async () => undefined;
  for (const { method, url, schema, config, links, constraints } of routes) documenter.route({ method, url, schema, config, links, constraints, handler: neverCalled });
  await documenter.ready();
  return documenter;
}
