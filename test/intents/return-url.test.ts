// returnUrl (extension, docs/intents.md#return-url): validated on create, part of the idempotency
// comparison, shown in the intent and in the payer's checkout view, and never followed by the service.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildTestApp } from '../helpers/test-app.js';
import { createIntent, createShop, uniqueExternalId, type Shop } from './fixtures.js';

let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  shop = await createShop(app, 'return-url');
});
afterAll(async () => app?.close());

const checkoutOf = (id: string) => app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${id}/checkout` });
const refused = async (returnUrl: unknown) => {
  const response = await createIntent(app, shop, { returnUrl });
  expect(response.statusCode, `${String(returnUrl).slice(0, 80)} → ${response.body}`).toBe(400);
  expect(response.json()).toMatchObject({ code: 'invalid_request', details: expect.arrayContaining([expect.objectContaining({ path: '/returnUrl' })]) });
};

describe('returnUrl', () => {
  it('is stored as given and shown in the intent and in the checkout view (null when absent)', async () => {
    const returnUrl = 'https://shop.example/orders/42?thanks=1#top';
    const intent = await createIntent(app, shop, { returnUrl });
    expect(intent.statusCode).toBe(201);
    expect(intent.json().returnUrl).toBe(returnUrl);
    expect((await checkoutOf(intent.json().id)).json()).toMatchObject({ returnUrl, merchant: { name: 'store' } });
    const plain = (await createIntent(app, shop)).json();
    expect(plain.returnUrl).toBeNull();
    expect((await checkoutOf(plain.id)).json().returnUrl).toBeNull();
  });

  it('accepts https anywhere, and http on a loopback host while the service runs on the embedded devchain', async () => {
    for (const returnUrl of ['https://shop.example', 'https://127.0.0.1:8443/x', 'http://127.0.0.1:3000/done', 'http://localhost:5173/', 'http://[::1]/back', 'HTTP://LOCALHOST/x']) {
      const response = await createIntent(app, shop, { returnUrl });
      expect(response.statusCode, returnUrl).toBe(201);
      expect(response.json().returnUrl).toBe(returnUrl);
    }
    expect((await createIntent(app, shop, { returnUrl: `https://shop.example/${'p'.repeat(2048 - 'https://shop.example/'.length)}` })).statusCode).toBe(201);
  });

  it('refuses anything else with 400 naming the field', async () => {
    for (const returnUrl of [
      'http://shop.example/',
      'http://127.0.0.2/', // loopback by address, but not one of the three names
      'http://localhost.shop.example/',
      'javascript:alert(1)',
      'data:text/html,hi',
      'ftp://shop.example/',
      '/relative/path',
      'shop.example',
      'https://user:secret@shop.example/',
      'https://shop.example@evil.example/',
      'https:evil.example', // parses as https://evil.example/ here, but is a relative link on a page
      'https:/evil.example',
      'https://shop.example/a b',
      ' https://shop.example/',
      'https://shop.example/\t',
      'https://shop.example/\n',
      '',
      `https://shop.example/${'p'.repeat(2049 - 'https://shop.example/'.length)}`,
      42,
      ['https://shop.example/'],
    ]) {
      await refused(returnUrl);
    }
  });

  it('takes part in the idempotency comparison: the same repeat is 200, another returnUrl is 409 intent_conflict', async () => {
    const externalId = uniqueExternalId();
    const first = await createIntent(app, shop, { externalId, returnUrl: 'https://shop.example/a' });
    expect(first.statusCode).toBe(201);
    const again = await createIntent(app, shop, { externalId, returnUrl: 'https://shop.example/a' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    for (const returnUrl of ['https://shop.example/b', null, undefined]) {
      const conflict = await createIntent(app, shop, { externalId, returnUrl });
      expect(conflict.statusCode).toBe(409);
      expect(conflict.json()).toMatchObject({ code: 'intent_conflict', details: { fields: ['returnUrl'], intentId: first.json().id } });
    }
    // Omitted and null are the same request.
    const bare = uniqueExternalId();
    expect((await createIntent(app, shop, { externalId: bare })).statusCode).toBe(201);
    expect((await createIntent(app, shop, { externalId: bare, returnUrl: null })).statusCode).toBe(200);
  });

  it('refuses loopback http once the service runs on a real chain (CHAIN_RPC_URL set), https still accepted', async () => {
    // The rule reads the configuration per request; this flips the one field it reads, for two requests.
    const config = app.ctx.config as { chainRpcUrl: string | null };
    const embedded = config.chainRpcUrl;
    config.chainRpcUrl = 'https://rpc.chain.example';
    try {
      await refused('http://127.0.0.1:3000/done');
      expect((await createIntent(app, shop, { returnUrl: 'https://shop.example/' })).statusCode).toBe(201);
    } finally {
      config.chainRpcUrl = embedded;
    }
  });
});
