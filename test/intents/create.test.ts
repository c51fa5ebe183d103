import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDG_ADDRESS } from '../../src/chain/registry.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, INTENT_FIELDS, uniqueExternalId, type Shop } from './fixtures.js';

// Intent create / get / reconcile with a project API key: idempotency, limits, access boundary.

let app: TestApp;
let shop: Shop;
let other: Shop;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  shop = await createShop(app, 'alice');
  other = await createShop(app, 'bob');
});
afterAll(async () => {
  await app?.close();
});

const get = (key: string, id: string) =>
  app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${id}`, headers: { authorization: `Bearer ${key}` } });

describe('create', () => {
  it('creates a pending intent with every field, fixed by the merchant', async () => {
    const externalId = uniqueExternalId();
    const response = await createIntent(app, shop, { externalId, amountUsdCents: 2500, customerRef: 'cust-1', description: 'Two coffees', metadata: { cart: [1, 2], note: null } });
    expect(response.statusCode).toBe(201);
    const intent = response.json();
    expect(Object.keys(intent).sort()).toEqual(INTENT_FIELDS);
    expect(intent).toMatchObject({
      merchantId: shop.merchantId,
      externalId,
      customerRef: 'cust-1',
      description: 'Two coffees',
      metadata: { cart: [1, 2], note: null },
      status: 'pending',
      amountUsdCents: 2500,
      currency: 'USD',
      network: 'eip155:4663',
      asset: USDG_ADDRESS,
      payTo: shop.payTo,
      transactionHash: null,
      settledAt: null,
      failureCode: null,
      failureMessage: null,
    });
    expect(intent.paymentUrl).toBe(`${app.urls.api}/v1/payment-intents/${intent.id}/pay`);
    // Default lifetime: 24 hours.
    expect(Date.parse(intent.expiresAt) - Date.parse(intent.createdAt)).toBe(24 * 3600 * 1000);
  });

  it('shows absent optional fields as null', async () => {
    const intent = (await createIntent(app, shop)).json();
    expect(intent).toMatchObject({ customerRef: null, description: null, metadata: null });
    expect(Object.keys(intent).sort()).toEqual(INTENT_FIELDS);
  });

  it('answers a repeated request with the same intent and 200 (metadata compared by value)', async () => {
    const body = { externalId: uniqueExternalId(), amountUsdCents: 999, customerRef: 'c', description: 'd', metadata: { a: 1, b: { c: 'x', d: [true] } } };
    const first = await createIntent(app, shop, body);
    expect(first.statusCode).toBe(201);
    const again = await createIntent(app, shop, { ...body, metadata: { b: { d: [true], c: 'x' }, a: 1 } });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
  });

  it('treats an omitted optional field and null alike', async () => {
    const externalId = uniqueExternalId();
    expect((await createIntent(app, shop, { externalId })).statusCode).toBe(201);
    expect((await createIntent(app, shop, { externalId, customerRef: null, description: null, metadata: null })).statusCode).toBe(200);
  });

  it.each([
    ['amountUsdCents', { amountUsdCents: 1001 }],
    ['customerRef', { customerRef: 'someone-else' }],
    ['customerRef', { customerRef: undefined }],
    ['description', { description: 'changed' }],
    ['metadata', { metadata: { a: 2 } }],
    ['metadata', { metadata: undefined }],
  ])('answers 409 intent_conflict when %s differs', async (field, change) => {
    const body = { externalId: uniqueExternalId(), amountUsdCents: 1000, customerRef: 'c', description: 'd', metadata: { a: 1 } };
    const first = await createIntent(app, shop, body);
    expect(first.statusCode).toBe(201);
    const conflict = await createIntent(app, shop, { ...body, ...change });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toMatchObject({ code: 'intent_conflict', details: { fields: [field], intentId: first.json().id } });
    // Nothing changed.
    expect((await get(shop.apiKey, first.json().id)).json()).toEqual(first.json());
  });

  it('scopes externalId to the merchant', async () => {
    const externalId = uniqueExternalId();
    expect((await createIntent(app, shop, { externalId })).statusCode).toBe(201);
    expect((await createIntent(app, other, { externalId })).statusCode).toBe(201);
  });

  it('creates one intent for many concurrent identical requests', async () => {
    const body = { externalId: uniqueExternalId(), amountUsdCents: 4242 };
    const answers = await Promise.all(Array.from({ length: 10 }, () => createIntent(app, shop, body)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.json().id)).size).toBe(1);
  });
});

describe('limits', () => {
  const bad = async (body: Record<string, unknown>) => {
    const response = await createIntent(app, shop, body);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'invalid_request', message: expect.any(String) });
  };
  const ok = async (body: Record<string, unknown>) => expect((await createIntent(app, shop, body)).statusCode).toBe(201);
  const utf8Json = (bytes: number) => ({ k: 'x'.repeat(bytes - '{"k":""}'.length) });

  it('bounds amountUsdCents to 100..100000000 integers', async () => {
    await bad({ amountUsdCents: 99 });
    await bad({ amountUsdCents: 100000001 });
    await bad({ amountUsdCents: 100.5 });
    await bad({ amountUsdCents: '100' });
    await bad({ amountUsdCents: undefined });
    await ok({ amountUsdCents: 100 });
    await ok({ amountUsdCents: 100000000 });
  });

  it('bounds merchantId, externalId and customerRef to 1-200 chars', async () => {
    await bad({ merchantId: '' });
    await bad({ merchantId: 'm'.repeat(201) });
    await bad({ externalId: '' });
    await bad({ externalId: 'e'.repeat(201) });
    await bad({ customerRef: '' });
    await bad({ customerRef: 'c'.repeat(201) });
    await ok({ externalId: `${uniqueExternalId()}-`.padEnd(200, 'e'), customerRef: 'c'.repeat(200) });
  });

  it('bounds description to 1-500 chars', async () => {
    await bad({ description: '' });
    await bad({ description: 'd'.repeat(501) });
    await ok({ description: 'd'.repeat(500) });
  });

  it('bounds metadata to an object of at most 16 KiB serialized', async () => {
    expect(JSON.stringify(utf8Json(16384)).length).toBe(16384);
    await ok({ metadata: utf8Json(16384) });
    await bad({ metadata: utf8Json(16385) });
    await bad({ metadata: [1, 2] });
    await bad({ metadata: 'text' });
  });

  it('refuses U+0000, which PostgreSQL cannot store, with 400', async () => {
    await bad({ externalId: 'a\u0000b' });
    await bad({ metadata: { a: 'x\u0000' } });
    await bad({ metadata: { nested: [{ 'k\u0000': 1 }] } });
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const response = await app.origins.api!.inject({
      method: 'POST',
      url: '/v1/payment-intents',
      headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
      payload: '{"merchantId":',
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('invalid_request');
  });
});

describe('access', () => {
  it('answers 404 merchant_not_found for a merchant outside the key’s project', async () => {
    for (const merchantId of [other.merchantId, '00000000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const response = await createIntent(app, shop, { merchantId });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ code: 'merchant_not_found' });
    }
  });

  it('answers 401 project_unauthorized without a valid project key', async () => {
    const mgmt = await app.mgmtSecret();
    for (const authorization of [undefined, 'Bearer svc_api_nope', `Bearer ${shop.identity}`, `Bearer ${mgmt}`]) {
      const response = await app.origins.api!.inject({
        method: 'POST',
        url: '/v1/payment-intents',
        headers: authorization ? { authorization } : {},
        payload: { merchantId: shop.merchantId, amountUsdCents: 100, externalId: uniqueExternalId() },
      });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ code: 'project_unauthorized' });
    }
  });

  it('answers 404 intent_not_found across projects and for unknown ids', async () => {
    const intent = (await createIntent(app, shop)).json();
    expect((await get(shop.apiKey, intent.id)).statusCode).toBe(200);
    for (const [key, id] of [[other.apiKey, intent.id], [shop.apiKey, '00000000-0000-7000-8000-000000000000'], [shop.apiKey, 'nope']]) {
      const response = await get(key, id);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ code: 'intent_not_found' });
      const reconcile = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${id}/reconcile`, headers: { authorization: `Bearer ${key}` } });
      expect(reconcile.statusCode).toBe(404);
      expect(reconcile.json().code).toBe('intent_not_found');
    }
  });

  it('answers 403 project_disabled for a disabled key or project, 401 for a revoked key', async () => {
    const projects = app.ctx.services.projects;
    const mine = await createShop(app, 'carol');
    const key = await projects.createApiKey('carol', mine.projectId, 'second');
    const asKey = (secret: string) => createIntent(app, { ...mine, apiKey: secret });
    expect((await asKey(key.secret)).statusCode).toBe(201);

    await projects.setKeyStatus(key.id, 'disabled');
    const disabled = await asKey(key.secret);
    expect(disabled.statusCode).toBe(403);
    expect(disabled.json()).toMatchObject({ code: 'project_disabled' });
    expect((await asKey(mine.apiKey)).statusCode).toBe(201);

    await projects.setProjectStatus(mine.projectId, 'disabled');
    expect((await asKey(mine.apiKey)).json()).toMatchObject({ code: 'project_disabled' });
    await projects.setProjectStatus(mine.projectId, 'active');
    expect((await asKey(mine.apiKey)).statusCode).toBe(201);

    await projects.setKeyStatus(key.id, 'revoked');
    expect((await asKey(key.secret)).json()).toMatchObject({ code: 'project_unauthorized' });
  });

  it('answers 403 merchant_disabled when creating for a disabled merchant', async () => {
    const mine = await createShop(app);
    await app.ctx.services.projects.setMerchantEnabled(mine.merchantId, false);
    const response = await createIntent(app, mine);
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ code: 'merchant_disabled' });
  });
});

describe('reconcile', () => {
  it('returns a pending intent unchanged, repeatedly, with or without an empty JSON body', async () => {
    const intent = (await createIntent(app, shop)).json();
    for (const headers of [{}, { 'content-type': 'application/json' }]) {
      const response = await app.origins.api!.inject({
        method: 'POST',
        url: `/v1/payment-intents/${intent.id}/reconcile`,
        headers: { authorization: `Bearer ${shop.apiKey}`, ...headers },
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual(intent);
    }
  });
});
