import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDG_ADDRESS } from '../../src/chain/registry.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

// Projects, API keys and merchants over HTTP with identity tokens (envelope family).

let app: TestApp;
let alice: string;
let bob: string;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  alice = await app.identityToken('alice');
  bob = await app.identityToken('bob');
});
afterAll(async () => {
  await app?.close();
});

const call = (method: 'GET' | 'POST', url: string, token: string | null, payload?: unknown) =>
  app.origins.api!.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(payload === undefined ? {} : { payload: payload as object }) });

const createProject = async (token: string, name = 'shop') => {
  const response = await call('POST', '/v1/projects', token, { name });
  expect(response.statusCode).toBe(201);
  return response.json().data as { project: { id: string }; apiKey: { id: string; secret: string; prefix: string } };
};

describe('projects', () => {
  it('creates a project with its first API key, whose secret is shown once', async () => {
    const response = await call('POST', '/v1/projects', alice, { name: 'Coffee shop' });
    expect(response.statusCode).toBe(201);
    const { code, message, data } = response.json();
    expect({ code, message }).toEqual({ code: 0, message: 'ok' });
    expect(data.project).toMatchObject({ name: 'Coffee shop', status: 'active', merchants: [] });
    expect(data.project.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(data.apiKey.secret).toMatch(/^svc_api_/);
    expect(data.apiKey.secret.startsWith(data.apiKey.prefix)).toBe(true);
    expect(data.project.apiKeys).toEqual([{ id: data.apiKey.id, name: data.apiKey.name, prefix: data.apiKey.prefix, status: 'active', lastUsedAt: null, createdAt: data.apiKey.createdAt }]);

    const listed = (await call('GET', '/v1/projects', alice)).json().data.find((p: { id: string }) => p.id === data.project.id);
    expect(listed.apiKeys[0]).not.toHaveProperty('secret');
    expect(JSON.stringify(listed)).not.toContain(data.apiKey.secret);
  });

  it('lists only the caller’s projects', async () => {
    const mine = await createProject(alice, 'alice-only');
    const theirs = await createProject(bob, 'bob-only');
    const aliceIds = (await call('GET', '/v1/projects', alice)).json().data.map((p: { id: string }) => p.id);
    const bobIds = (await call('GET', '/v1/projects', bob)).json().data.map((p: { id: string }) => p.id);
    expect(aliceIds).toContain(mine.project.id);
    expect(aliceIds).not.toContain(theirs.project.id);
    expect(bobIds).toEqual([theirs.project.id]);
    const carol = await app.identityToken('carol');
    expect((await call('GET', '/v1/projects', carol)).json()).toEqual({ code: 0, message: 'ok', data: [] });
  });

  it('answers 400 for an invalid name and 401 without an identity token', async () => {
    for (const body of [{ name: '' }, { name: 'n'.repeat(201) }, {}, { name: 7 }]) {
      const response = await call('POST', '/v1/projects', alice, body);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 1000 });
    }
    expect((await call('POST', '/v1/projects', alice, { name: 'n'.repeat(200) })).statusCode).toBe(201);
    const anonymous = await call('GET', '/v1/projects', null);
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toEqual({ code: 1001, message: 'Missing or invalid credentials', data: null });
    const { apiKey } = await createProject(alice);
    expect((await call('GET', '/v1/projects', apiKey.secret)).statusCode).toBe(401);
  });
});

describe('API keys', () => {
  it('creates a key (secret once) that authenticates intent calls', async () => {
    const { project } = await createProject(alice);
    const response = await call('POST', `/v1/projects/${project.id}/api-keys`, alice, { name: 'backend' });
    expect(response.statusCode).toBe(201);
    const key = response.json().data;
    expect(key).toMatchObject({ name: 'backend', status: 'active', lastUsedAt: null });
    expect(key.secret).toMatch(/^svc_api_/);
    const probe = await app.origins.api!.inject({ method: 'GET', url: '/v1/payment-intents/00000000-0000-7000-8000-000000000000', headers: { authorization: `Bearer ${key.secret}` } });
    expect(probe.json().code).toBe('intent_not_found'); // authenticated, then not found
    const listed = (await call('GET', '/v1/projects', alice)).json().data.find((p: { id: string }) => p.id === project.id);
    expect(listed.apiKeys.map((k: { id: string }) => k.id)).toContain(key.id);
    expect(JSON.stringify(listed)).not.toContain(key.secret);
  });

  it('answers 404 for another user’s project and 400 for a bad id or name', async () => {
    const { project } = await createProject(alice);
    const foreign = await call('POST', `/v1/projects/${project.id}/api-keys`, bob, { name: 'steal' });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ code: 1004, data: null });
    expect((await call('POST', '/v1/projects/not-a-uuid/api-keys', alice, { name: 'k' })).statusCode).toBe(400);
    expect((await call('POST', `/v1/projects/${project.id}/api-keys`, alice, { name: '' })).statusCode).toBe(400);
    expect((await call('POST', `/v1/projects/${project.id}/api-keys`, alice, { name: 'k'.repeat(101) })).statusCode).toBe(400);
    expect((await call('POST', `/v1/projects/${project.id}/api-keys`, alice, { name: 'k'.repeat(100) })).statusCode).toBe(201);
  });
});

describe('merchants', () => {
  it('creates a merchant with a checksummed payTo and the service’s network and asset', async () => {
    const { project } = await createProject(alice);
    const lower = '0x52908400098527886e0f7030069857d2e4169ee7';
    const upper = '0x52908400098527886E0F7030069857D2E4169EE7'.toUpperCase().replace('0X', '0x');
    const fromUpper = await call('POST', `/v1/projects/${project.id}/merchants`, alice, { name: 'Upper', payTo: upper });
    expect(fromUpper.json().data.payTo).toBe('0x52908400098527886E0F7030069857D2E4169EE7');
    const response = await call('POST', `/v1/projects/${project.id}/merchants`, alice, { name: 'Store', payTo: lower, network: 'eip155:1', asset: '0x0000000000000000000000000000000000000001' });
    expect(response.statusCode).toBe(201);
    const merchant = response.json().data;
    expect(merchant).toMatchObject({ name: 'Store', enabled: true, payTo: '0x52908400098527886E0F7030069857D2E4169EE7', network: 'eip155:4663', asset: USDG_ADDRESS });
    expect(Object.keys(merchant).sort()).toEqual(['asset', 'createdAt', 'enabled', 'id', 'name', 'network', 'payTo', 'updatedAt']);
    const listed = (await call('GET', '/v1/projects', alice)).json().data.find((p: { id: string }) => p.id === project.id);
    expect(listed.merchants).toContainEqual(merchant);
  });

  it.each([
    ['not an address', 'hello'],
    ['too short', '0x1234'],
    ['bad checksum', '0x52908400098527886E0F7030069857D2E4169Ee7'],
    ['missing', undefined],
  ])('answers 400 for a payTo that is %s', async (_label, payTo) => {
    const { project } = await createProject(alice);
    const response = await call('POST', `/v1/projects/${project.id}/merchants`, alice, { name: 'Store', payTo });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 1000 });
  });

  it('answers 400 for a bad name and 404 for another user’s project', async () => {
    const { project } = await createProject(alice);
    const payTo = '0x52908400098527886E0F7030069857D2E4169EE7';
    expect((await call('POST', `/v1/projects/${project.id}/merchants`, alice, { name: '', payTo })).statusCode).toBe(400);
    expect((await call('POST', `/v1/projects/${project.id}/merchants`, alice, { name: 'm'.repeat(201), payTo })).statusCode).toBe(400);
    const foreign = await call('POST', `/v1/projects/${project.id}/merchants`, bob, { name: 'Store', payTo });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ code: 1004 });
    const listed = (await call('GET', '/v1/projects', alice)).json().data.find((p: { id: string }) => p.id === project.id);
    expect(listed.merchants).toEqual([]);
  });
});
