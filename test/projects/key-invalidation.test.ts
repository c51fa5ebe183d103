import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/platform/db.js';
import { createLogger } from '../../src/platform/request-context.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

// Project-key lookups are cached per node (src/modules/projects/key-cache.ts); every change to a key's
// principal is announced with a NOTIFY in its transaction, and every node drops what it cached. Two
// nodes in this process on one database: on PGlite they share the one instance (its LISTEN callbacks
// are the in-process path), on PostgreSQL each has its own pool and LISTEN connection, so the
// notification really crosses the server. test/projects/key-cache-cluster.test.ts does the same with
// two `serve` processes.

const PEPPER = 'k'.repeat(64);
const NO_SUCH_INTENT = '/v1/payment-intents/00000000-0000-4000-8000-000000000000';
/** What the spec promises: a change reaches every node within this. */
const WITHIN_MS = 1_000;

let a: TestApp;
let b: { server: RunningServer; database: Database; close(): Promise<void> };
let alice: string;

/** A second node on node A's database: the same pepper, its own context, cache, and (on PostgreSQL) connections. */
async function secondNode(first: TestApp) {
  const url = first.testDatabase.url;
  const database = url ? await openDatabase({ url, pgliteDir: null, poolSize: 5 }) : first.testDatabase.database;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-node-b-'));
  const config = loadConfig({
    TOLLGATE_DATA_DIR: dataDir,
    API_PORT: '0',
    FACILITATOR_PORT: '0',
    RELAY_PORT: '0',
    ASSETS_PORT: '0',
    DEVCHAIN_PORT: '0',
    LOG_LEVEL: 'silent',
    SECRET_PEPPER: PEPPER,
    ...(url ? { DATABASE_URL: url } : {}),
  });
  const server = await startServer({ config, roles: ['api'], database, ephemeralSecrets: true, adminSocket: false, log: createLogger('silent') });
  return {
    server,
    database,
    async close() {
      await server.stop();
      if (url) await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

beforeAll(async () => {
  a = await buildTestApp({ roles: ['api'], env: { SECRET_PEPPER: PEPPER } });
  b = await secondNode(a);
  alice = await a.identityToken('alice');
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

type Node = 'a' | 'b';
const serverOf = (node: Node): RunningServer => (node === 'a' ? a : b.server);

/** A project-key route on the node: 404 (no such intent) while the key is good, 401 revoked, 403 disabled. */
async function probe(node: Node, secret: string): Promise<{ status: number; code: unknown }> {
  const response = await serverOf(node).origins.api!.inject({ method: 'GET', url: NO_SUCH_INTENT, headers: { authorization: `Bearer ${secret}` } });
  return { status: response.statusCode, code: response.json().code };
}

/** The node's lookups so far by result (hit, miss, bypass), from its /metrics counter. */
async function lookups(node: Node): Promise<Record<string, number>> {
  const metric = await serverOf(node).ctx.metrics.registry.getSingleMetric('tollgate_project_key_lookups_total')!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.result), v.value]));
}

/** Probes until the node answers `status`; how long that took (ms), or throws after 5 s. */
async function untilStatus(node: Node, secret: string, status: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const answer = await probe(node, secret);
    const elapsed = performance.now() - started;
    if (answer.status === status) return elapsed;
    if (elapsed > 5_000) throw new Error(`node ${node} still answers ${answer.status} (want ${status}) after ${Math.round(elapsed)} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Uses the key on both nodes until each answers it from its cache. */
async function warm(secret: string) {
  for (const node of ['a', 'b'] as const) {
    expect((await probe(node, secret)).status).toBe(404);
    const before = (await lookups(node)).hit ?? 0;
    expect((await probe(node, secret)).status).toBe(404);
    expect((await lookups(node)).hit, `node ${node} answered the key from its cache`).toBe(before + 1);
  }
}

async function createProject(name: string) {
  const response = await a.origins.api!.inject({ method: 'POST', url: '/v1/projects', headers: { authorization: `Bearer ${alice}` }, payload: { name } });
  expect(response.statusCode).toBe(201);
  return response.json().data as { project: { id: string }; apiKey: { id: string; secret: string } };
}

const operator = (command: string, id: string) => adminCommands(a.ctx, a.modules)[command]!({ id });

describe('project-key cache invalidation across nodes', () => {
  it('a key revoked through node A is refused by node B within 1 s, though both had it cached', async () => {
    const { project, apiKey } = await createProject('revoke');
    await warm(apiKey.secret);
    const revoked = await a.origins.api!.inject({ method: 'DELETE', url: `/v1/projects/${project.id}/api-keys/${apiKey.id}`, headers: { authorization: `Bearer ${alice}` } });
    expect(revoked.statusCode).toBe(200);
    // The node that revoked refuses it on the very next request; the other once the NOTIFY arrives.
    expect(await probe('a', apiKey.secret)).toEqual({ status: 401, code: 'project_unauthorized' });
    const elapsed = await untilStatus('b', apiKey.secret, 401);
    console.log(`[key-invalidation] revoke seen by node B after ${elapsed.toFixed(1)} ms (${a.testDatabase.url ? 'PostgreSQL' : 'PGlite'})`);
    expect(elapsed).toBeLessThan(WITHIN_MS);
    expect((await probe('b', apiKey.secret)).code).toBe('project_unauthorized');
  });

  it('an operator disabling a project turns every key of it off on both nodes within 1 s, and enabling turns them on', async () => {
    const { project, apiKey } = await createProject('disable');
    const extra = await a.ctx.services.projects.createApiKey('alice', project.id, 'second');
    const other = await createProject('bystander');
    for (const secret of [apiKey.secret, extra.secret, other.apiKey.secret]) await warm(secret);

    expect(await operator('project.disable', project.id)).toEqual({ ok: true });
    for (const secret of [apiKey.secret, extra.secret]) {
      expect(await probe('a', secret)).toEqual({ status: 403, code: 'project_disabled' });
      expect(await untilStatus('b', secret, 403)).toBeLessThan(WITHIN_MS);
      expect((await probe('b', secret)).code).toBe('project_disabled');
    }
    // Another project's key stays cached: the notification named one project.
    const hits = (await lookups('b')).hit ?? 0;
    expect((await probe('b', other.apiKey.secret)).status).toBe(404);
    expect((await lookups('b')).hit).toBe(hits + 1);

    expect(await operator('project.enable', project.id)).toEqual({ ok: true });
    expect((await probe('a', apiKey.secret)).status).toBe(404);
    expect(await untilStatus('b', apiKey.secret, 404)).toBeLessThan(WITHIN_MS);
    expect(await untilStatus('b', extra.secret, 404)).toBeLessThan(WITHIN_MS);
  });

  it('an operator disabling or revoking one key reaches the other node within 1 s; its sibling stays on', async () => {
    const { project, apiKey } = await createProject('key-switches');
    const sibling = await a.ctx.services.projects.createApiKey('alice', project.id, 'sibling');
    await warm(apiKey.secret);
    await warm(sibling.secret);
    expect(await operator('project-key.disable', apiKey.id)).toEqual({ ok: true });
    expect((await probe('a', apiKey.secret)).status).toBe(403);
    expect(await untilStatus('b', apiKey.secret, 403)).toBeLessThan(WITHIN_MS);
    expect(await operator('project-key.revoke', apiKey.id)).toEqual({ ok: true });
    expect(await untilStatus('b', apiKey.secret, 401)).toBeLessThan(WITHIN_MS);
    expect((await probe('b', sibling.secret)).status).toBe(404);
  });

  it.skipIf(!process.env.DATABASE_URL)('a node whose LISTEN connection drops starts over with an empty cache and hears revocations again (PostgreSQL)', async () => {
    const { project, apiKey } = await createProject('reconnect');
    await warm(apiKey.secret);
    const listeners = () =>
      b.database.query<{ pid: number }>(sql`select pid from pg_stat_activity where datname = current_database() and query ilike 'listen %' and pid <> pg_backend_pid()`);
    // Node A's and node B's: each opens its listening connection when it starts, so wait for both to be there.
    await expect.poll(async () => (await listeners()).length).toBe(2);
    const before = (await listeners()).map((row) => row.pid);
    await b.database.query(sql`select pg_terminate_backend(pid) from pg_stat_activity where pid in (${sql.join(before.map((pid) => sql`${pid}`), sql`, `)})`);
    // Both nodes reopen their listening connection (100 ms after the drop, then backing off).
    const deadline = Date.now() + 10_000;
    while ((await listeners()).filter((row) => !before.includes(row.pid)).length < 2) {
      if (Date.now() > deadline) throw new Error('the listening connections were not reopened');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Changes while it was down were never heard: the cache starts empty, then fills again.
    const counted = await lookups('b');
    expect((await probe('b', apiKey.secret)).status).toBe(404);
    expect((await probe('b', apiKey.secret)).status).toBe(404);
    const after = await lookups('b');
    expect({ miss: after.miss! - counted.miss!, hit: after.hit! - counted.hit! }).toEqual({ miss: 1, hit: 1 });

    const revoked = await a.origins.api!.inject({ method: 'DELETE', url: `/v1/projects/${project.id}/api-keys/${apiKey.id}`, headers: { authorization: `Bearer ${alice}` } });
    expect(revoked.statusCode).toBe(200);
    expect(await untilStatus('b', apiKey.secret, 401)).toBeLessThan(WITHIN_MS);
  });
});
