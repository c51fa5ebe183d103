// The audit trail (issue 48 item 1): every operator command and every credential or key change through the API
// leaves one row (when, who, what, target, request id, outcome), never a secret; owners read their project's
// rows; and no route, no command and no statement can change a row once written.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import type { AuditRecord } from '../../src/platform/audit.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { operationsOf, sample } from '../fuzz/openapi-cases.js';
import { createTenant, credentialFor, idFor, type Tenant } from '../fuzz/tenants.js';
import { call } from '../wallets/helpers.js';

let app: TestApp;
let a: Tenant;

const trail = async (query: { target?: string } = {}) => app.ctx.audit.list({ ...query, limit: 10_000 });
const rowOf = async (requestId: string): Promise<AuditRecord> => {
  const rows = (await trail()).filter((row) => row.requestId === requestId);
  expect(rows, `one row for request ${requestId}`).toHaveLength(1);
  return rows[0]!;
};
const command = (name: string, args: Record<string, unknown>, requestId: string) =>
  adminCommands(app.ctx, app.modules)[name]!(args, { requestId, operator: 'ops@host', concerns: () => {} });

beforeAll(async () => {
  app = await buildTestApp();
  a = await createTenant(app, 'audit');
}, 180_000);
afterAll(async () => app?.close());

describe('audit trail', () => {
  it('a key created and revoked through the API: one row each, with who, what, target, request id and outcome, never the secret', async () => {
    const api = app.origins.api!;
    const headers = (requestId: string) => ({ authorization: `Bearer ${a.identity}`, 'x-request-id': requestId });
    const created = await api.inject({ method: 'POST', url: `/v1/projects/${a.projectId}/api-keys`, headers: headers('req-key-create'), payload: { name: 'ci' } });
    expect(created.statusCode).toBe(201);
    const key = created.json().data;
    const revoked = await api.inject({ method: 'DELETE', url: `/v1/projects/${a.projectId}/api-keys/${key.id}`, headers: headers('req-key-revoke') });
    expect(revoked.statusCode).toBe(200);

    expect(await rowOf('req-key-create')).toMatchObject({ action: 'project-key.create', actor: { kind: 'identity', id: a.userId }, target: key.id, projectId: a.projectId, via: 'api', outcome: 'ok', status: 201 });
    const revokeRow = await rowOf('req-key-revoke');
    expect(revokeRow).toMatchObject({ action: 'project-key.revoke', actor: { kind: 'identity', id: a.userId }, target: key.id, projectId: a.projectId, outcome: 'ok', status: 200 });
    expect(Date.parse(revokeRow.at)).toBeGreaterThan(Date.now() - 60_000);

    // Someone else's key: refused, and the attempt is on record under the one who tried.
    const other = await createTenant(app, 'audit-other');
    const refused = await api.inject({ method: 'DELETE', url: `/v1/projects/${a.projectId}/api-keys/${key.id}`, headers: { authorization: `Bearer ${other.identity}`, 'x-request-id': 'req-foreign' } });
    expect(refused.statusCode).toBe(404);
    expect(await rowOf('req-foreign')).toMatchObject({ action: 'project-key.revoke', actor: { kind: 'identity', id: other.userId }, outcome: 'refused', status: 404 });
    // No credential, no row: it acted as nobody.
    await api.inject({ method: 'DELETE', url: `/v1/projects/${a.projectId}/api-keys/${key.id}`, headers: { 'x-request-id': 'req-anonymous' } });
    expect((await trail()).filter((row) => row.requestId === 'req-anonymous')).toHaveLength(0);

    const everything = JSON.stringify(await trail());
    for (const secret of [key.secret, a.apiKey, a.mgmt, a.walletSecret, a.identity]) expect(everything).not.toContain(secret);
  });

  it('wallet credentials, policies and approvals through the API are on record under the management credential', async () => {
    const made = await app.origins.api!.inject({ method: 'POST', url: `/v1/wallets/${a.walletId}/credentials`, headers: { authorization: `Bearer ${a.mgmt}`, 'x-request-id': 'req-wcred' }, payload: { name: 'bot' } });
    expect(made.statusCode).toBe(201);
    const credential = made.json().data;
    expect((await call(app, 'DELETE', `/v1/wallets/${a.walletId}/credentials/${credential.id}`, a.mgmt)).status).toBe(200);
    expect((await call(app, 'PUT', `/v1/wallets/${a.walletId}/policy`, a.mgmt, { denyHosts: ['evil.example'] })).status).toBeLessThan(300);
    const mgmtId = (await rowOf('req-wcred')).actor;
    expect(mgmtId.kind).toBe('mgmt');
    const rows = await trail();
    expect(rows.find((row) => row.action === 'wallet-credential.revoke' && row.target === credential.id)).toMatchObject({ actor: mgmtId, outcome: 'ok' });
    expect(rows.find((row) => row.action === 'wallet.policy.set' && row.target === a.walletId)).toMatchObject({ actor: mgmtId });
    expect(JSON.stringify(rows)).not.toContain(credential.secret);
  });

  it("operator commands: one row each under the CLI's request id, ok or refused; the owner sees the switch on their project", async () => {
    await command('merchant.disable', { id: a.merchantId }, 'req-op-disable');
    await expect(command('merchant.enable', { id: '00000000-0000-4000-8000-000000000000' }, 'req-op-missing')).rejects.toThrow('not found');
    const mgmt = await command('mgmt-credential.create', { name: 'ops' }, 'req-op-mgmt') as { id: string; secret: string };
    await command('mgmt-credential.revoke', { id: mgmt.id }, 'req-op-mgmt-revoke');
    await command('intents.stuck', {}, 'req-op-read');

    expect(await rowOf('req-op-disable')).toMatchObject({ action: 'merchant.disable', actor: { kind: 'operator', id: 'ops@host' }, target: a.merchantId, projectId: a.projectId, via: 'cli', outcome: 'ok', status: null });
    expect(await rowOf('req-op-missing')).toMatchObject({ action: 'merchant.enable', outcome: 'refused', detail: { error: 'not found' } });
    expect(await rowOf('req-op-mgmt')).toMatchObject({ action: 'mgmt-credential.create', target: mgmt.id, outcome: 'ok' });
    expect(await rowOf('req-op-mgmt-revoke')).toMatchObject({ action: 'mgmt-credential.revoke', target: mgmt.id, outcome: 'ok' });
    expect((await trail()).filter((row) => row.requestId === 'req-op-read')).toHaveLength(0);
    expect(JSON.stringify(await trail())).not.toContain(mgmt.secret);

    const owner = await call(app, 'GET', `/v1/projects/${a.projectId}/audit?limit=200`, a.identity);
    expect(owner.status).toBe(200);
    const disable = owner.body.data.find((entry: AuditRecord) => entry.requestId === 'req-op-disable');
    // The operator's login is theirs: the owner sees `operator`.
    expect(disable).toMatchObject({ action: 'merchant.disable', actor: { kind: 'operator', id: 'operator' }, target: a.merchantId });
    expect(owner.body.data.some((entry: AuditRecord) => entry.requestId === 'req-key-revoke')).toBe(true);
    expect(owner.body.data.some((entry: AuditRecord) => entry.requestId === 'req-wcred')).toBe(false);
    // Paging: newest first, `before` the last seq seen.
    const first = await call(app, 'GET', `/v1/projects/${a.projectId}/audit?limit=1`, a.identity);
    const next = await call(app, 'GET', `/v1/projects/${a.projectId}/audit?limit=1&before=${first.body.data[0].seq}`, a.identity);
    expect(next.body.data[0].seq).toBeLessThan(first.body.data[0].seq);
    // Another user's project: 404, as every owner-only route.
    const stranger = await app.identityToken('audit-stranger');
    expect((await call(app, 'GET', `/v1/projects/${a.projectId}/audit`, stranger)).status).toBe(404);
  });

  it('the database refuses UPDATE, DELETE and TRUNCATE of the audit table, to the service itself', async () => {
    const before = await trail();
    expect(before.length).toBeGreaterThan(0);
    for (const statement of [sql`update audit_log set outcome = 'ok'`, sql`delete from audit_log`, sql`truncate audit_log`]) {
      const error = (await app.ctx.database.query(statement).catch((e: unknown) => e)) as Error & { cause?: Error };
      expect(error, 'refused').toBeInstanceOf(Error);
      expect(error.cause?.message ?? error.message).toMatch(/audit_log is append-only: (UPDATE|DELETE|TRUNCATE) refused/);
    }
    expect(await trail()).toEqual(before);
  });

  it('no source file but the trail itself writes the audit table, and the trail has no update or delete', () => {
    const root = path.resolve(import.meta.dirname, '../../src');
    const files = fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && f.name.endsWith('.ts')).map((f) => path.join(f.parentPath, f.name));
    const touching = files.filter((file) => /\bauditLog\b|audit_log/.test(fs.readFileSync(file, 'utf8'))).map((file) => path.relative(root, file)).sort();
    expect(touching).toEqual(['platform/audit.ts', 'platform/tables.ts']);
    const trailSource = fs.readFileSync(path.join(root, 'platform/audit.ts'), 'utf8');
    expect(trailSource).not.toMatch(/\.(update|delete)\(auditLog\)|\b(update|delete from|truncate)\s+audit_log/i);
  });

  it('every route of every origin and every operator command, aimed at the trail: no row changes', { timeout: 300_000 }, async () => {
    const before = await trail();
    const targets = [...new Set(before.flatMap((row) => [String(row.seq), row.target, row.requestId].filter((v): v is string => !!v)))].slice(0, 40);
    const failures: string[] = [];
    let calls = 0;

    for (const [origin, instance] of Object.entries(app.origins)) {
      const documented = new Map(operationsOf(origin, (await instance!.inject({ method: 'GET', url: '/openapi.json' })).json()).map((op) => [`${op.method} ${op.path.replace(/\{(\w+)\}/g, ':$1')}`, op]));
      for (const route of routesOf(instance!.printRoutes({ commonPrefix: false }))) {
        if (route.method === 'HEAD' || route.method === 'OPTIONS') continue;
        if (route.method === 'GET' && route.path === '/mcp') continue; // a stream that stays open
        const op = documented.get(`${route.method} ${route.path}`);
        const bodyOf = (id: string) => {
          if (route.method === 'GET' || route.method === 'DELETE') return undefined;
          const sampled = op?.body ? sample(op.body, '$body', { value: () => undefined, foreign: () => undefined, credential: () => undefined }) : {};
          return { ...(sampled && typeof sampled === 'object' ? sampled : {}), id, seq: Number(id) || id, requestId: id, target: id, outcome: 'ok' };
        };
        const credentials = [...new Set([credentialFor(a, route.method, route.path), a.identity, a.mgmt, a.apiKey, a.walletSecret].filter((c): c is string => !!c))];
        for (const id of [null, ...targets.slice(0, 3)]) {
          const url = route.path.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(id ?? idFor(a, name) ?? 'x')).replace('*', id ?? 'x');
          for (const credential of id === null ? credentials : credentials.slice(0, 1)) {
            calls += 1;
            const body = bodyOf(id ?? 'x');
            const answered = await Promise.race([
              instance!.inject({ method: route.method as 'GET', url, headers: { authorization: `Bearer ${credential}`, 'x-request-id': `fuzz-api-${calls}`, ...(body ? { 'content-type': 'application/json' } : {}) }, payload: body ? JSON.stringify(body) : undefined }),
              new Promise<null>((resolve) => setTimeout(resolve, 5_000, null)),
            ]);
            if (answered && answered.statusCode >= 500) failures.push(`${origin} ${route.method} ${url} → ${answered.statusCode}`);
          }
        }
      }
    }
    for (const run of Object.values(adminCommands(app.ctx, app.modules))) {
      for (const id of targets.slice(0, 5)) {
        calls += 1;
        await run({ id, sub: id, name: id, address: id, symbol: id, interval: '1m', candles: [], cents: '1', seq: id }, { requestId: `fuzz-${calls}`, operator: 'fuzz', concerns: () => {} }).catch(() => undefined);
      }
    }
    expect(calls).toBeGreaterThan(200);
    console.log(`[audit] ${calls} calls aimed at ${before.length} audit rows; ${failures.length} answered 5xx${failures.length ? `:\n${failures.join('\n')}` : ''}`);

    const after = await trail();
    const bySeq = new Map(after.map((row) => [row.seq, row]));
    for (const row of before) expect(bySeq.get(row.seq), `audit row ${row.seq}`).toEqual(row);
    expect(after.length).toBeGreaterThan(before.length);
    // Each call (its own request id) left at most one row: no route or command writes two for one action.
    const perRequest = new Map<string, number>();
    for (const row of after.filter((r) => r.requestId.startsWith('fuzz-'))) perRequest.set(row.requestId, (perRequest.get(row.requestId) ?? 0) + 1);
    expect([...perRequest].filter(([, count]) => count > 1)).toEqual([]);
    expect([...perRequest.keys()].some((id) => id.startsWith('fuzz-api-')), 'audited routes were reached').toBe(true);
  });
});

/** Every route Fastify's router holds (its printRoutes tree, without a common prefix): method and path. */
function routesOf(tree: string): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const at = line.search(/[├└]── /);
    if (at < 0) continue;
    const depth = at / 4;
    const match = /^(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line.slice(at + 4))!;
    stack.length = depth;
    stack.push(match[1]!);
    for (const method of match[2]?.split(', ') ?? []) routes.push({ method, path: stack.join('') });
  }
  return routes;
}
