// Regressions of the hostile-input review: requests that killed the embedded database, answered 500,
// or answered outside their family's shape. Each is refused with a 400 (or its family's status) and
// the service keeps working afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';
import { call } from '../wallets/helpers.js';

let app: TestApp;
let shop: Shop;
let mgmt: string;
let queueId: string;

const nested = (levels: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
};
const NUL = 'bad\u0000name';
const LONE = 'bad\ud800name';

beforeAll(async () => {
  app = await buildTestApp();
  shop = await createShop(app);
  mgmt = await app.mgmtSecret();
  const queue = await call(app, 'POST', '/v1/event-queues', shop.apiKey, { name: 'hostile' });
  expect(queue.status).toBe(201);
  queueId = queue.body.data.id;
});
afterAll(async () => app?.close());

/** The database still answers: a read and a write through the API. */
async function stillAlive() {
  expect((await createIntent(app, shop)).statusCode).toBe(201);
  expect((await call(app, 'GET', '/v1/event-queues', shop.apiKey)).status).toBe(200);
}

describe('deep JSON never reaches the database', () => {
  it('intent metadata nested 1,500 levels (~9 KB) is 400 and the service lives on', async () => {
    const response = await createIntent(app, shop, { metadata: nested(1500) });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('32') });
    await stillAlive();
  });

  it('an event payload nested 1,000 levels is 400 and the service lives on', async () => {
    const response = await call(app, 'POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: nested(1000) });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 1000, data: null });
    await stillAlive();
  });

  it('32 levels are accepted, 33 are not', async () => {
    expect((await createIntent(app, shop, { metadata: nested(31) })).statusCode).toBe(201); // body + 31 = 32
    expect((await createIntent(app, shop, { metadata: nested(32) })).statusCode).toBe(400);
  });

  it('a payment header nested deeply is 400 invalid_payment_header', async () => {
    const header = Buffer.from(JSON.stringify({ x402Version: 2, payload: nested(2000) })).toString('base64');
    const response = await app.origins.api!.inject({ method: 'GET', url: '/x402-test/ping', headers: { 'payment-signature': header } });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: { code: 'invalid_payment_header' } });
  });
});

describe('U+0000 and lone surrogates are 400, never 500', () => {
  it('in every text field that reaches a table', async () => {
    const identity = `Bearer ${shop.identity}`;
    const cases: Array<[string, string, string | undefined, Record<string, unknown>]> = [
      ['POST', '/v1/wallets', mgmt, { externalId: NUL, name: 'w' }],
      ['POST', '/v1/wallets', mgmt, { externalId: 'w-1', name: NUL }],
      ['POST', '/v1/projects', undefined, { name: NUL }],
      ['POST', `/v1/projects/${shop.projectId}/api-keys`, undefined, { name: NUL }],
      ['POST', `/v1/projects/${shop.projectId}/merchants`, undefined, { name: NUL, payTo: shop.payTo }],
      ['POST', '/v1/event-queues', shop.apiKey, { name: NUL }],
      ['POST', '/v1/schedules', shop.apiKey, { queueId, externalId: NUL, name: 's', cronExpression: '* * * * *', payload: {} }],
      ['POST', '/v1/schedules', shop.apiKey, { queueId, externalId: 's-1', name: 's', cronExpression: '* * * * *', payload: { x: LONE } }],
      ['POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: { x: NUL } }],
      ['POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: { x: LONE } }],
      ['POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: { [LONE]: 1 } }],
      ['POST', `/v1/event-queues/${queueId}/events`, shop.apiKey, { payload: {}, deduplicationKey: NUL }],
    ];
    for (const [method, url, secret, body] of cases) {
      const response = await app.origins.api!.inject({
        method: method as 'POST',
        url,
        headers: { authorization: secret ? `Bearer ${secret}` : identity, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      expect(response.statusCode, `${url} ${JSON.stringify(body)}: ${response.body}`).toBe(400);
      expect(response.json()).toMatchObject({ code: 1000 });
    }
    const intent = await createIntent(app, shop, { customerRef: NUL });
    expect(intent.statusCode).toBe(400);
    expect(intent.json()).toMatchObject({ code: 'invalid_request' });
    const query = await call(app, 'GET', `/v1/wallets/${encodeURIComponent(NUL)}`, mgmt);
    expect(query.status).toBe(400);
    await stillAlive();
  });
});

describe('framework refusals in the family shape, with x-request-id', () => {
  it('a repeated query parameter on the public attestation route is 400', async () => {
    const response = await app.origins.api!.inject({ method: 'GET', url: '/x402scan/attestation?chain=eip155:4663&chain=4663' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });

  it('a path parameter over 100 characters is 414 in each family', async () => {
    const long = 'a'.repeat(150);
    const cases: Array<[string, string, unknown]> = [
      [app.urls.api, `/v1/wallets/${long}`, { code: 1014, data: null }],
      [app.urls.api, `/v1/payment-intents/${long}`, { code: 'uri_too_long' }],
      [app.urls.api, `/x402scan/transactions/${long}`, { error: { code: 'uri_too_long' } }],
    ];
    for (const [base, path, shape] of cases) {
      const response = await fetch(`${base}${path}`);
      expect(response.status, path).toBe(414);
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      expect(await response.json()).toMatchObject(shape as object);
    }
    const bad = await fetch(`${app.urls.api}/v1/wallets/%E0%A4%A`);
    expect(bad.status).toBe(400);
    expect(bad.headers.get('x-request-id')).toBeTruthy();
    expect(await bad.json()).toMatchObject({ code: 1000 });
  });

  it('413 and 415 are in the family shape', async () => {
    const big = await call(app, 'POST', '/v1/event-queues', shop.apiKey, { name: 'x'.repeat(2_000_000) });
    expect(big).toMatchObject({ status: 413, body: { code: 1007 } });
    const xml = await app.origins.api!.inject({ method: 'POST', url: '/v1/event-queues', headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'text/xml' }, payload: '<a/>' });
    expect(xml.statusCode).toBe(415);
    expect(xml.json()).toMatchObject({ code: 1008 });
  });
});

describe('credential first, then validation', () => {
  it('no credential with a bad body is 401, on every family', async () => {
    for (const url of ['/v1/wallets', '/v1/payment-intents', `/v1/event-queues/${queueId}/events`, '/v1/projects']) {
      const response = await app.origins.api!.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{not json' });
      expect(response.statusCode, url).toBe(401);
    }
  });

  it('claim with Content-Type: application/json and an empty body is accepted', async () => {
    const response = await app.origins.api!.inject({
      method: 'POST',
      url: `/v1/event-queues/${queueId}/claim`,
      headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
      payload: '',
    });
    expect(response.statusCode, response.body).toBe(200);
  });
});
