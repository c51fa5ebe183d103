// A chain RPC URL carries the provider's API key in its path (`/v2/KEY`) or its query (`?apikey=KEY`),
// and viem's errors quote the whole URL. When the RPC fails, /ready and /health (public on every
// origin) and error answers must name the host and never the key; so must `serve` when it cannot
// reach the RPC at start. The RPC here is a stub in front of a devchain, so the node starts; then it
// answers 500, answers garbage, and goes away.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEphemeralDevchain, type Devchain } from '../../src/chain/devchain.js';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { ApiError } from '../../src/platform/http/errors.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

const PATH_KEY = 'SECRETKEY123';
const QUERY_KEY = 'SECRETQUERY456';

type Mode = 'proxy' | 'status-500' | 'garbage';

let chain: Devchain;
let stub: http.Server;
let mode: Mode = 'proxy';
let host: string;
let app: TestApp;

/** Passes JSON-RPC to the devchain, or fails as `mode` says. */
function rpcStub(target: string): http.Server {
  return http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      if (mode === 'status-500') return response.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      if (mode === 'garbage') return response.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json</html>');
      const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
  });
}

interface ReadyBody {
  message: string;
  data: { failing: string[]; checks: Record<string, { ok: boolean; reason?: string; detail?: unknown }> };
}

async function get(base: string, route: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${base}${route}`);
  return { status: response.status, text: await response.text() };
}

/**
 * A route that quotes the chain's error in its answer, as a careless one would: a 502 ApiError, and a
 * 4xx error of Fastify's kind (its message is answered as is).
 */
const quotingModule: ModuleFactory = (ctx) => ({
  name: 'rpc-quote',
  routes: {
    api: (app) => {
      app.get('/test/rpc-quote/:kind', async (request) => {
        try {
          return { block: Number(await ctx.chain.publicClient.getBlockNumber({ cacheTime: 0 })) };
        } catch (error) {
          const message = `the chain failed: ${(error as Error).message}`;
          if ((request.params as { kind: string }).kind === 'api-error') throw new ApiError(502, 'chain_failed', message);
          throw Object.assign(new Error(message), { statusCode: 400 });
        }
      });
    },
  },
});

/** /ready and /health on every origin and the quoting route's answers: no key in either form anywhere, the host in each reason. */
async function expectNoKey(): Promise<void> {
  for (const base of [app.urls.api, app.urls.facilitator, app.urls.relay]) {
    const ready = await get(base, '/ready');
    expect(ready.text).not.toContain(PATH_KEY);
    expect(ready.text).not.toContain(QUERY_KEY);
    const body = JSON.parse(ready.text) as ReadyBody;
    expect(body.data.failing).toContain('chain');
    expect(body.data.checks.chain!.reason).toContain(host);
    const health = await get(base, '/health');
    expect(health.status).toBe(200);
    expect(health.text).not.toContain(PATH_KEY);
    expect(health.text).not.toContain(QUERY_KEY);
  }
  for (const kind of ['api-error', 'status-400']) {
    const answer = await get(app.urls.api, `/test/rpc-quote/${kind}`);
    expect(answer.status, kind).toBe(kind === 'api-error' ? 502 : 400);
    expect(answer.text, kind).toContain(host);
    expect(answer.text, kind).not.toContain(PATH_KEY);
    expect(answer.text, kind).not.toContain(QUERY_KEY);
  }
}

beforeAll(async () => {
  chain = await startEphemeralDevchain();
  stub = rpcStub(chain.rpcUrl);
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  host = `127.0.0.1:${(stub.address() as AddressInfo).port}`;
  app = await buildTestApp({
    roles: ['api', 'facilitator', 'relay'],
    factories: [...moduleFactories, quotingModule],
    env: { CHAIN_RPC_URL: `http://${host}/v2/${PATH_KEY}?apikey=${QUERY_KEY}`, FACILITATOR_PRIVATE_KEY: generatePrivateKey() },
  });
}, 60_000);

afterAll(async () => {
  await app?.close();
  stub?.closeAllConnections();
  await new Promise((resolve) => stub?.close(resolve));
  await chain?.stop();
});

describe('/ready with a failing chain RPC whose URL carries a key in its path and its query', () => {
  it('passes while the RPC answers', async () => {
    const ready = JSON.parse((await get(app.urls.api, '/ready')).text) as ReadyBody;
    expect(ready.data.checks.chain).toMatchObject({ ok: true });
    expect((await get(app.urls.api, '/test/rpc-quote/api-error')).status).toBe(200);
  });

  it('the RPC answers 500: every reason and error answer names the host, not the key', async () => {
    mode = 'status-500';
    await expectNoKey();
  });

  it('the RPC answers something that is not JSON: every reason and error answer names the host, not the key', async () => {
    mode = 'garbage';
    await expectNoKey();
  });

  it('the RPC is gone (connection refused): every reason and error answer names the host, not the key', async () => {
    stub.closeAllConnections();
    await new Promise((resolve) => stub.close(resolve));
    await expectNoKey();
  });
});

describe('serve with a CHAIN_RPC_URL that does not answer at start', () => {
  const dirs = dataDirs();
  afterAll(dirs.removeAll);

  it('exits 1 printing the error with the host, not the key in the path or the query', { timeout: 120_000 }, async () => {
    const out = await cli(
      { TOLLGATE_DATA_DIR: dirs.migrated(), ALLOW_DEV_KEYS: '1', CHAIN_RPC_URL: `http://127.0.0.1:1/v2/${PATH_KEY}?apikey=${QUERY_KEY}`, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0' },
      'serve',
    );
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('HTTP request failed');
    expect(out.stderr).toContain('http://127.0.0.1:1/[redacted]');
    expect(out.stderr).not.toContain(PATH_KEY);
    expect(out.stderr).not.toContain(QUERY_KEY);
  });
});
