// Project-key cache invalidation between two `tollgate serve` processes on one PostgreSQL database (issue 31):
// both nodes answer a key from their own cache; the key is revoked (or its project disabled) through node A;
// node B must refuse it within 1 s. Node B learns of it only through PostgreSQL's LISTEN/NOTIFY: the
// processes share nothing else. Each delay is measured from node A's answer to node B's first refusal.
// PostgreSQL only: PGlite is one process per data dir (key-invalidation.test.ts covers it in-process).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPublicClient, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { Devchain, devchainChain } from '../../src/chain/devchain.js';
import { ensureMulticall3 } from '../../src/chain/multicall3.js';
import { freePort, NodeProcesses } from '../helpers/cluster-nodes.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

const NO_SUCH_INTENT = '/v1/payment-intents/00000000-0000-4000-8000-000000000000';
const WITHIN_MS = 1_000;

interface Node {
  name: 'A' | 'B';
  dataDir: string;
  api: string;
}

let chain: Devchain;
let testDb: TestDatabase;
const processes = new NodeProcesses();
const dirs: string[] = [];
const nodes: Node[] = [];
let token: string;

async function call(node: Node, method: string, route: string, secret: string, body?: unknown) {
  const response = await fetch(`${node.api}${route}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A project-key route: 404 (no such intent) while the key is good, 401 revoked, 403 disabled. */
const probe = (node: Node, secret: string) => call(node, 'GET', NO_SUCH_INTENT, secret);

/** The node's project-key lookups answered from its cache so far (its /metrics). */
async function cacheHits(node: Node): Promise<number> {
  const text = await (await fetch(`${node.api}/metrics`)).text();
  return Number(/^tollgate_project_key_lookups_total\{result="hit"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** Probes node B until it answers `status`; ms from `since`, or throws after 5 s. */
async function untilStatus(node: Node, secret: string, status: number, since: number): Promise<number> {
  for (;;) {
    const answer = await probe(node, secret);
    const elapsed = performance.now() - since;
    if (answer.status === status) return elapsed;
    if (elapsed > 5_000) throw new Error(`node ${node.name} still answers ${answer.status} (want ${status}) after ${Math.round(elapsed)} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Uses the key on both nodes until each answers it from its cache. */
async function warm(secret: string) {
  for (const node of nodes) {
    expect((await probe(node, secret)).status).toBe(404);
    const before = await cacheHits(node);
    expect((await probe(node, secret)).status).toBe(404);
    expect(await cacheHits(node), `node ${node.name} answered from its cache`).toBe(before + 1);
  }
}

describe.skipIf(!process.env.DATABASE_URL)('project-key cache across two serve processes (PostgreSQL)', () => {
  beforeAll(async () => {
    chain = new Devchain({ dataDir: null, port: 0 });
    await chain.start();
    await ensureMulticall3(createPublicClient({ chain: devchainChain(chain.rpcUrl), transport: http(chain.rpcUrl) }), chain.rpcUrl);
    testDb = await openTestDatabase();
    const pepper = randomBytes(32).toString('hex');
    const specs = await Promise.all(
      (['A', 'B'] as const).map(async (name) => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tollgate-keys-${name}-`));
        dirs.push(dataDir);
        return { name, dataDir, apiPort: await freePort() };
      }),
    );
    const started = await Promise.all(
      specs.map((spec) =>
        processes.serve({
          label: `node ${spec.name}`,
          roles: ['api'],
          env: {
            ALLOW_DEV_KEYS: '1',
            SECRET_PEPPER: pepper,
            TOLLGATE_DATA_DIR: spec.dataDir,
            DATABASE_URL: testDb.url!,
            DATABASE_POOL_SIZE: '3',
            CHAIN_RPC_URL: chain.rpcUrl,
            API_PORT: String(spec.apiPort),
            FACILITATOR_PORT: '0',
            RELAY_PORT: '0',
            ASSETS_PORT: '0',
            LOG_LEVEL: 'warn',
          },
        }),
      ),
    );
    specs.forEach((spec, i) => nodes.push({ name: spec.name, dataDir: spec.dataDir, api: started[i]!.origins.api! }));
    // Node A's dev identity issuer signs the owner's token; only node A is called with it.
    token = ((await callAdminSocket(nodes[0]!.dataDir, 'dev.token', { sub: 'alice' })) as { token: string }).token;
  }, 180_000);

  afterAll(async () => {
    await processes.stopAll();
    await chain?.stop();
    await testDb?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a key revoked through node A is refused by node B within 1 s', async () => {
    const [a, b] = nodes as [Node, Node];
    const created = await call(a, 'POST', '/v1/projects', token, { name: 'cluster' });
    expect(created.status).toBe(201);
    const { project, apiKey } = created.body.data;
    await warm(apiKey.secret);

    const since = performance.now();
    const revoked = await call(a, 'DELETE', `/v1/projects/${project.id}/api-keys/${apiKey.id}`, token);
    expect(revoked.status).toBe(200);
    const answered = performance.now() - since;
    expect((await probe(a, apiKey.secret)).status).toBe(401);
    const elapsed = await untilStatus(b, apiKey.secret, 401, since);
    console.log(`[key-cache-cluster] revoke: node A answered in ${answered.toFixed(1)} ms, node B refused the key ${elapsed.toFixed(1)} ms after the request`);
    expect(elapsed).toBeLessThan(WITHIN_MS);
    expect((await probe(b, apiKey.secret)).body.code).toBe('project_unauthorized');
  });

  it('a project disabled by the operator on node A is 403 project_disabled on both nodes within 1 s, and back on enable', async () => {
    const [a, b] = nodes as [Node, Node];
    const created = await call(a, 'POST', '/v1/projects', token, { name: 'cluster-disable' });
    const { project, apiKey } = created.body.data;
    await warm(apiKey.secret);

    let since = performance.now();
    expect(await callAdminSocket(a.dataDir, 'project.disable', { id: project.id })).toEqual({ ok: true });
    expect(await probe(a, apiKey.secret)).toMatchObject({ status: 403, body: { code: 'project_disabled' } });
    const disabled = await untilStatus(b, apiKey.secret, 403, since);
    expect((await probe(b, apiKey.secret)).body.code).toBe('project_disabled');

    since = performance.now();
    expect(await callAdminSocket(a.dataDir, 'project.enable', { id: project.id })).toEqual({ ok: true });
    expect((await probe(a, apiKey.secret)).status).toBe(404);
    const enabled = await untilStatus(b, apiKey.secret, 404, since);
    console.log(`[key-cache-cluster] project disable seen by node B after ${disabled.toFixed(1)} ms, enable after ${enabled.toFixed(1)} ms`);
    expect(disabled).toBeLessThan(WITHIN_MS);
    expect(enabled).toBeLessThan(WITHIN_MS);
  });
});
