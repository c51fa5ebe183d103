import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CredentialKind } from '../../src/platform/auth/principal.js';
import { envelope } from '../../src/platform/http/render.js';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

// One route per credential kind, guarded exactly as real routes are.
const KINDS: CredentialKind[] = ['identity', 'mgmt', 'project_key', 'wallet'];
const guardedRoutes: ModuleFactory = (ctx) => ({
  name: 'auth-probe',
  routes: {
    api: (app) => {
      for (const kind of KINDS) {
        app.get(`/probe/${kind}`, { preHandler: ctx.auth.guard([kind]) }, async (request) => envelope(request.principal));
      }
    },
  },
});

let app: TestApp;
const secrets = {} as Record<CredentialKind, string>;
let projectId: string;
let projectKeyId: string;

const probe = (kind: CredentialKind, authorization?: string) =>
  app.origins.api!.inject({ method: 'GET', url: `/probe/${kind}`, headers: authorization ? { authorization } : {} });

beforeAll(async () => {
  app = await buildTestApp({ factories: [...moduleFactories, guardedRoutes] });
  secrets.identity = await app.identityToken('alice');
  secrets.mgmt = await app.mgmtSecret();
  const created = await app.origins.api!.inject({
    method: 'POST',
    url: '/v1/projects',
    headers: { authorization: `Bearer ${secrets.identity}` },
    payload: { name: 'shop' },
  });
  expect(created.statusCode).toBe(201);
  secrets.project_key = created.json().data.apiKey.secret;
  projectId = created.json().data.project.id;
  projectKeyId = created.json().data.apiKey.id;
  const wallet = await app.origins.api!.inject({
    method: 'POST',
    url: '/v1/wallets',
    headers: { authorization: `Bearer ${secrets.mgmt}` },
    payload: { externalId: 'probe', name: 'probe' },
  });
  expect(wallet.statusCode).toBe(201);
  secrets.wallet = wallet.json().data.credential.secret;
});
afterAll(async () => {
  await app?.close();
});

describe('credential kinds', () => {
  for (const route of KINDS) {
    for (const presented of KINDS) {
      const allowed = route === presented;
      it(`${route} route ${allowed ? 'accepts' : 'refuses'} a ${presented} credential`, async () => {
        const response = await probe(route, `Bearer ${secrets[presented]}`);
        if (allowed) {
          expect(response.statusCode).toBe(200);
          expect(response.json().data.kind).toBe(route);
        } else {
          expect(response.statusCode).toBe(401);
          expect(response.json()).toEqual({ code: 1001, message: 'Missing or invalid credentials', data: null });
        }
      });
    }
  }

  it.each([
    ['no header', undefined],
    ['an empty bearer', 'Bearer '],
    ['another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['garbage', 'Bearer not-a-credential'],
    ['a made-up api key', 'Bearer svc_api_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    ['a made-up wallet credential', 'Bearer svc_wallet_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
  ])('refuses %s with 401 on every kind', async (_label, header) => {
    for (const kind of KINDS) {
      const response = await probe(kind, header);
      expect(response.statusCode).toBe(401);
      expect(response.json().code).toBe(1001);
    }
  });

  it('refuses an expired identity token', async () => {
    const expired = await app.identityToken('alice', -10);
    expect((await probe('identity', `Bearer ${expired}`)).statusCode).toBe(401);
  });

  it('refuses a revoked management credential at once', async () => {
    const secret = await app.mgmtSecret('short-lived');
    expect((await probe('mgmt', `Bearer ${secret}`)).statusCode).toBe(200);
    const principal = (await probe('mgmt', `Bearer ${secret}`)).json().data;
    expect(await app.ctx.mgmtCredentials.revoke(principal.credentialId)).toBe(true);
    expect((await probe('mgmt', `Bearer ${secret}`)).statusCode).toBe(401);
  });

  it('answers 403 for a disabled project key and 401 once it is revoked', async () => {
    const projects = app.ctx.services.projects;
    const extra = await projects.createApiKey('alice', projectId, 'to-disable');
    expect((await probe('project_key', `Bearer ${extra.secret}`)).statusCode).toBe(200);
    await projects.setKeyStatus(extra.id, 'disabled');
    const disabled = await probe('project_key', `Bearer ${extra.secret}`);
    expect(disabled.statusCode).toBe(403);
    expect(disabled.json().code).toBe(1003);
    await projects.setKeyStatus(extra.id, 'revoked');
    expect((await probe('project_key', `Bearer ${extra.secret}`)).statusCode).toBe(401);
    // The project's other key is untouched.
    expect((await probe('project_key', `Bearer ${secrets.project_key}`)).json().data.keyId).toBe(projectKeyId);
  });

  it('refuses a revoked wallet credential at once', async () => {
    const mgmt = `Bearer ${secrets.mgmt}`;
    const walletId = (await probe('wallet', `Bearer ${secrets.wallet}`)).json().data.walletId;
    const made = await app.origins.api!.inject({ method: 'POST', url: `/v1/wallets/${walletId}/credentials`, headers: { authorization: mgmt }, payload: { name: 'short-lived' } });
    const { id, secret } = made.json().data;
    expect((await probe('wallet', `Bearer ${secret}`)).json().data).toMatchObject({ kind: 'wallet', walletId, credentialId: id });
    await app.origins.api!.inject({ method: 'DELETE', url: `/v1/wallets/${walletId}/credentials/${id}`, headers: { authorization: mgmt } });
    expect((await probe('wallet', `Bearer ${secret}`)).statusCode).toBe(401);
    expect((await probe('wallet', `Bearer ${secrets.wallet}`)).statusCode).toBe(200);
  });

  it('stores secrets only as keyed hashes', async () => {
    const rows = await app.ctx.database.query<{ secret_hash: string; prefix: string }>(
      (await import('drizzle-orm')).sql`select secret_hash, prefix from project_api_keys union all select secret_hash, prefix from mgmt_credentials`,
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.secret_hash).toMatch(/^p1\.[0-9a-f]{16}\.[0-9a-f]{64}$/);
      expect(Object.values(secrets)).not.toContain(row.secret_hash);
      expect(row.prefix).toMatch(/^svc_api_.{8}$/);
    }
    expect(app.ctx.hasher.hash(secrets.mgmt)).not.toBe(
      new (await import('../../src/platform/secrets.js')).SecretHasher('x'.repeat(32)).hash(secrets.mgmt),
    );
  });
});
