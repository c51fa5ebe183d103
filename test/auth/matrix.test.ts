// The auth matrix: every authenticated route (from /openapi.json) × every credential a caller could
// bring — none, malformed, expired, revoked, another kind, another tenant's. Each refusal must have
// the right status and the family's shape; another tenant's credential must never reach tenant A's
// resources, and what it may list must hold nothing of A's.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { operationsOf, sample, type Operation } from '../fuzz/openapi-cases.js';
import { createTenant, credentialFor, expectFamilyShape, idFor, reportCounts, type Tenant } from '../fuzz/tenants.js';
import { call } from '../wallets/helpers.js';

let app: TestApp;
let a: Tenant;
let b: Tenant;
/** Tenant A's credentials that no longer work, per kind. */
const dead = { expiredIdentity: '', revokedMgmt: '', revokedWallet: '', revokedKey: '' };

beforeAll(async () => {
  app = await buildTestApp();
  [a, b] = [await createTenant(app, 'a'), await createTenant(app, 'b')];
  dead.expiredIdentity = await app.ctx.devIdentity!.sign(a.userId, -60);
  const mgmt = await app.ctx.mgmtCredentials.create('to-revoke');
  await app.ctx.mgmtCredentials.revoke(mgmt.id);
  dead.revokedMgmt = mgmt.secret;
  const credential = await call(app, 'POST', `/v1/wallets/${a.walletId}/credentials`, a.mgmt, { name: 'to-revoke' });
  expect(credential.status).toBe(201);
  expect((await call(app, 'DELETE', `/v1/wallets/${a.walletId}/credentials/${credential.body.data.id}`, a.mgmt)).status).toBe(200);
  dead.revokedWallet = credential.body.data.secret;
  const key = await app.origins.api!.inject({ method: 'POST', url: `/v1/projects/${a.projectId}/api-keys`, headers: { authorization: `Bearer ${a.identity}` }, payload: { name: 'to-revoke' } });
  expect(key.statusCode).toBe(201);
  await adminCommands(app.ctx, app.modules)['project-key.revoke']({ id: key.json().data.id });
  dead.revokedKey = key.json().data.secret;
}, 180_000);
afterAll(async () => app?.close());

type Kind = 'identity' | 'mgmt' | 'wallet' | 'project_key';
const kindOf = (op: Operation): Kind => {
  const credential = credentialFor(a, op.method, op.path);
  return credential === a.identity ? 'identity' : credential === a.mgmt ? 'mgmt' : credential === a.walletSecret ? 'wallet' : 'project_key';
};
const secretOf = (t: Tenant, kind: Kind) => ({ identity: t.identity, mgmt: t.mgmt, wallet: t.walletSecret, project_key: t.apiKey })[kind];
const revokedOf = (kind: Kind) => ({ identity: dead.expiredIdentity, mgmt: dead.revokedMgmt, wallet: dead.revokedWallet, project_key: dead.revokedKey })[kind];

it('every authenticated route × none, malformed, expired, revoked, other kind, other tenant: 0 leaks, each refusal right', async () => {
  const ops = operationsOf('api', (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json()).filter((op) => op.secured);
  expect(ops.length).toBeGreaterThan(25);
  const aIds = [a.projectId, a.merchantId, a.intentId, a.queueId, a.eventId, a.scheduleId, a.walletId, a.credentialId, a.payTo];
  const failures: string[] = [];
  let cells = 0;
  for (const op of ops) {
    const kind = kindOf(op);
    const url = op.path.replace(/\{(\w+)\}/g, (_, name: string) => idFor(a, name) ?? 'missing');
    const body = op.body ? JSON.stringify(sample(op.body, '$body', { value: (n) => (n === 'leaseToken' ? a.leaseToken : n === 'queueId' ? a.queueId : n === 'name' ? 'matrix' : undefined), foreign: () => undefined, credential: () => undefined })) : undefined;
    const cellsOfOp: Array<[string, string | undefined, 'refused' | 'foreign']> = [
      ['none', undefined, 'refused'],
      ['malformed', 'Bearer', 'refused'],
      ['malformed-scheme', `Token ${secretOf(a, kind)}`, 'refused'],
      ['truncated', `Bearer ${secretOf(a, kind).slice(0, -2)}`, 'refused'],
      [kind === 'identity' ? 'expired' : 'revoked', `Bearer ${revokedOf(kind)}`, 'refused'],
      ...(['identity', 'mgmt', 'wallet', 'project_key'] as Kind[]).filter((k) => k !== kind).map((k): [string, string, 'refused'] => [`other-kind:${k}`, `Bearer ${secretOf(a, k)}`, 'refused']),
      ['other-tenant', `Bearer ${secretOf(b, kind)}`, 'foreign'],
    ];
    if (kind !== 'identity') cellsOfOp.push(['expired-identity', `Bearer ${dead.expiredIdentity}`, 'refused']);
    for (const [label, authorization, expectation] of cellsOfOp) {
      cells += 1;
      const response = await app.origins.api!.inject({
        method: op.method as 'GET',
        url,
        headers: { ...(authorization ? { authorization } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        payload: body,
      });
      const where = `${op.method} ${op.path} [${label}] → ${response.statusCode} ${response.body.slice(0, 160)}`;
      if (expectation === 'refused') {
        if (response.statusCode !== 401) failures.push(where);
      } else if (response.statusCode < 300) {
        // Only the caller's own resources: a list or a create may answer, with nothing of A's in it.
        if (op.params.length > 0 || aIds.some((id) => response.body.toLowerCase().includes(id.toLowerCase()))) failures.push(`leak: ${where}`);
      } else if (![400, 402, 404, 409].includes(response.statusCode)) {
        // 402 is the caller's own purchase or top-up asking for payment: it says nothing of A.
        failures.push(where);
      }
      if (response.statusCode >= 400) {
        try {
          expectFamilyShape('api', url, response.statusCode, response.json(), where);
        } catch (error) {
          failures.push((error as Error).message.split('\n')[0]!);
        }
      }
    }
  }
  expect(failures, failures.join('\n')).toEqual([]);
  reportCounts('auth-matrix', { routes: ops.length, cells });
}, 300_000);
