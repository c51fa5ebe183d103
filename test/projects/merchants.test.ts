import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';

// The merchant owner API (extension): PATCH /v1/projects/{projectId}/merchants/{merchantId} renames,
// disables and re-enables; names are unique within a project (409 merchant_name_taken); a disabled
// merchant takes no new intents and its open intents cannot be paid (403 merchant_disabled).
// Payments that get past the pay route's check are covered on the devchain in test/intents/events.test.ts.

let app: TestApp;
let alice: Shop;
let bob: Shop;

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  alice = await createShop(app, 'merchant-owner-alice');
  bob = await createShop(app, 'merchant-owner-bob');
});
afterAll(async () => app?.close());

const call = (method: 'GET' | 'POST' | 'PATCH', url: string, token: string | null, payload?: unknown) =>
  app.origins.api!.inject({ method, url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(payload === undefined ? {} : { payload: payload as object }) });
const merchantUrl = (shop: Pick<Shop, 'projectId'>, merchantId: string) => `/v1/projects/${shop.projectId}/merchants/${merchantId}`;
const payTo = '0x52908400098527886E0F7030069857D2E4169EE7';
const addMerchant = (shop: Shop, name: string) => call('POST', `/v1/projects/${shop.projectId}/merchants`, shop.identity, { name, payTo });
const merchantsOf = async (shop: Shop) =>
  (await call('GET', '/v1/projects', shop.identity)).json().data.find((p: { id: string }) => p.id === shop.projectId).merchants as Array<{ id: string; name: string; enabled: boolean }>;

describe('PATCH a merchant', () => {
  it('renames it and answers the Merchant (with enabled), listed the same way', async () => {
    const created = (await addMerchant(alice, 'Before')).json().data;
    const renamed = await call('PATCH', merchantUrl(alice, created.id), alice.identity, { name: 'After' });
    expect(renamed.statusCode).toBe(200);
    const merchant = renamed.json().data;
    expect(merchant).toMatchObject({ id: created.id, name: 'After', enabled: true, payTo: created.payTo, network: created.network, asset: created.asset, createdAt: created.createdAt });
    expect(Object.keys(merchant).sort()).toEqual(['asset', 'createdAt', 'enabled', 'id', 'name', 'network', 'payTo', 'updatedAt']);
    expect(await merchantsOf(alice)).toContainEqual(merchant);
    // Renaming to its own name is no conflict; an empty body changes nothing (not even updatedAt).
    const same = await call('PATCH', merchantUrl(alice, created.id), alice.identity, { name: 'After' });
    expect(same.statusCode).toBe(200);
    const unchanged = await call('PATCH', merchantUrl(alice, created.id), alice.identity, {});
    expect(unchanged.statusCode).toBe(200);
    expect(unchanged.json().data).toEqual(same.json().data);
  });

  it('refuses a name already used in the project, on create and on rename: 409 merchant_name_taken naming the holder', async () => {
    const first = (await addMerchant(alice, 'Kiosk')).json().data;
    const again = await addMerchant(alice, 'Kiosk');
    expect(again.statusCode).toBe(409);
    expect(again.json()).toEqual({ code: 1005, message: expect.any(String), data: { reason: 'merchant_name_taken', merchantId: first.id } });
    const second = (await addMerchant(alice, 'Cart')).json().data;
    const rename = await call('PATCH', merchantUrl(alice, second.id), alice.identity, { name: 'Kiosk' });
    expect(rename.statusCode).toBe(409);
    expect(rename.json().data).toEqual({ reason: 'merchant_name_taken', merchantId: first.id });
    expect((await merchantsOf(alice)).filter((m) => m.name === 'Kiosk')).toHaveLength(1);
    // Names are per project: another project may use it.
    expect((await addMerchant(bob, 'Kiosk')).statusCode).toBe(201);
    // Exact text: another case is another name.
    expect((await addMerchant(alice, 'kiosk')).statusCode).toBe(201);
  });

  it('creates one merchant of many concurrent creates with one name (the constraint decides)', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => addMerchant(alice, 'Race')));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
  });

  it('answers 400 for a bad body or merchant id', async () => {
    const id = (await addMerchant(alice, 'Validated')).json().data.id;
    for (const body of [{ name: '' }, { name: 'n'.repeat(201) }, { name: 7 }, { enabled: 'no' }, { enabled: null }]) {
      const response = await call('PATCH', merchantUrl(alice, id), alice.identity, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json()).toMatchObject({ code: 1000 });
    }
    expect((await call('PATCH', merchantUrl(alice, 'not-a-uuid'), alice.identity, { name: 'x' })).statusCode).toBe(400);
  });

  it("never reaches another user's merchant: 401 without a token, 404 for another user's project or merchant", async () => {
    const target = bob.merchantId;
    expect((await call('PATCH', merchantUrl(bob, target), null, { enabled: false })).statusCode).toBe(401);
    // Alice through Bob's project: the project is not hers.
    const viaTheirs = await call('PATCH', merchantUrl(bob, target), alice.identity, { enabled: false, name: 'mine now' });
    expect(viaTheirs.statusCode).toBe(404);
    expect(viaTheirs.json()).toMatchObject({ code: 1004 });
    // Alice through her own project: Bob's merchant is not in it.
    const viaMine = await call('PATCH', merchantUrl(alice, target), alice.identity, { enabled: false, name: 'mine now' });
    expect(viaMine.statusCode).toBe(404);
    expect(viaMine.json()).toMatchObject({ code: 1004, data: { reason: 'merchant_not_found' } });
    expect(await merchantsOf(bob)).toContainEqual(expect.objectContaining({ id: target, name: 'store', enabled: true }));
    // A project key is not an identity token.
    expect((await call('PATCH', merchantUrl(bob, target), bob.apiKey, { enabled: false })).statusCode).toBe(401);
  });
});

describe('a disabled merchant', () => {
  it('takes no new intents and its open intents cannot be paid (403 merchant_disabled) until it is enabled again', async () => {
    const shop = await createShop(app);
    const open = (await createIntent(app, shop)).json();
    const disabled = await call('PATCH', merchantUrl(shop, shop.merchantId), shop.identity, { enabled: false });
    expect(disabled.statusCode).toBe(200);
    expect(disabled.json().data).toMatchObject({ id: shop.merchantId, enabled: false });

    const create = await createIntent(app, shop);
    expect(create.statusCode).toBe(403);
    expect(create.json()).toEqual({ code: 'merchant_disabled', message: 'This merchant is disabled: it takes no new payment intents' });
    const pay = await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${open.id}/pay` });
    expect(pay.statusCode).toBe(403);
    expect(pay.json()).toEqual({ code: 'merchant_disabled', message: 'The merchant of this intent is disabled: it accepts no payments' });
    // The merchant still reads its intent; the intent itself is unchanged.
    const read = await app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${open.id}`, headers: { authorization: `Bearer ${shop.apiKey}` } });
    expect(read.json()).toMatchObject({ id: open.id, status: 'pending' });

    expect((await call('PATCH', merchantUrl(shop, shop.merchantId), shop.identity, { enabled: true })).json().data.enabled).toBe(true);
    expect((await app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${open.id}/pay` })).statusCode).toBe(402);
    expect((await createIntent(app, shop)).statusCode).toBe(201);
  });
});
