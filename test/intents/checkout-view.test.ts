// The payer's view of an intent (GET /v1/payment-intents/{id}/checkout, public) and the owner's listing
// (GET /v1/projects/{id}/payment-intents, identity token): what each shows, to whom, and their filters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { buildPayApp } from './harness.js';

let app: TestApp;
let shop: Shop;
const clock = new ManualClock();
beforeAll(async () => {
  app = await buildPayApp({ clock });
  shop = await createShop(app, 'view-owner');
});
afterAll(async () => app?.close());

const get = (url: string, token?: string) => app.origins.api!.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

describe('the checkout view', () => {
  it('shows a payer what the page needs and nothing the merchant keeps private, without a credential', async () => {
    const intent = (await createIntent(app, shop, { amountUsdCents: 4200, description: 'Blue mug', customerRef: 'cust-77', metadata: { sku: 'MUG-1' } })).json();
    const view = await get(`/v1/payment-intents/${intent.id}/checkout`);
    expect(view.statusCode).toBe(200);
    expect(view.headers['cache-control']).toBe('no-store');
    expect(view.json()).toEqual({
      id: intent.id,
      status: 'pending',
      amountUsdCents: 4200,
      currency: 'USD',
      amount: '42000000',
      network: intent.network,
      asset: intent.asset,
      payTo: intent.payTo,
      merchant: { name: 'store' },
      description: 'Blue mug',
      returnUrl: null,
      expiresAt: intent.expiresAt,
      settledAt: null,
      transactionHash: null,
      failureCode: null,
      failureMoneyMoved: null,
      lastPaymentError: null,
      paidVia: null,
      payer: null,
      // The intent's own deposit address, made on this first read (docs/intents.md#deposit-addresses).
      deposit: { address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/), due: '42000000', uri: expect.stringMatching(/^ethereum:0x[0-9a-fA-F]{40}@4663\/transfer\?address=0x[0-9a-fA-F]{40}&uint256=42000000$/) },
    });
    for (const secret of ['cust-77', 'MUG-1', intent.externalId, shop.projectId, shop.merchantId]) expect(view.body).not.toContain(secret);
  });

  it('answers 404 in the intent family for an unknown or malformed id', async () => {
    for (const id of ['01900000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const missing = await get(`/v1/payment-intents/${id}/checkout`);
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toMatchObject({ code: 'intent_not_found' });
    }
  });
});

describe('the paymentUrl opened with GET', () => {
  const page = (id: string, accept: string) => app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${id}/pay`, headers: { accept } });
  const html = 'text/html,application/xhtml+xml,*/*;q=0.8';

  it('answers the checkout page for a known intent, the same page with 404 for an unknown one, and 406 without text/html; always Vary: Accept', async () => {
    const intent = (await createIntent(app, shop)).json();
    const known = await page(intent.id, html);
    expect(known.statusCode).toBe(200);
    expect(known.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(known.body).toContain('id="checkout"');
    for (const id of ['01900000-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const unknown = await page(id, html);
      expect(unknown.statusCode).toBe(404);
      // Still the friendly page (it tells the payer the link is wrong), not a JSON error.
      expect(unknown.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(unknown.body).toBe(known.body);
      expect(unknown.headers['content-security-policy']).toBe(known.headers['content-security-policy']);
    }
    const json = await page(intent.id, 'application/json');
    expect(json.statusCode).toBe(406);
    expect(json.json()).toMatchObject({ code: 'not_acceptable' });
    for (const answer of [known, await page('01900000-0000-7000-8000-000000000000', html), json]) {
      expect(String(answer.headers.vary).toLowerCase().split(/\s*,\s*/)).toContain('accept');
    }
  });
});

describe("the owner's intent listing", () => {
  it('lists newest first with merchant and status filters and a cursor; others get 404', async () => {
    const owner = await createShop(app, 'listing-owner');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createIntent(app, owner, { amountUsdCents: 100 + i })).json().id);
    const base = `/v1/projects/${owner.projectId}/payment-intents`;

    // Newest first by id (time-ordered; within one millisecond, by the id's random part).
    const newest = [...ids].sort().reverse();
    const all = await get(`${base}?limit=3`, owner.identity);
    expect(all.statusCode).toBe(200);
    expect(all.json().data.map((i: { id: string }) => i.id)).toEqual(newest.slice(0, 3));
    const next = await get(`${base}?limit=3&before=${newest[2]}`, owner.identity);
    expect(next.json().data.map((i: { id: string }) => i.id)).toEqual(newest.slice(3));
    expect((await get(`${base}?merchantId=${owner.merchantId}&status=settled`, owner.identity)).json().data).toEqual([]);
    expect((await get(`${base}?merchantId=${shop.merchantId}`, owner.identity)).json().data).toEqual([]);

    expect((await get(base, shop.identity)).statusCode).toBe(404);
    expect((await get(base)).statusCode).toBe(401);
    expect((await get(base, owner.apiKey)).statusCode).toBe(401);
    for (const query of ['?status=paid', '?limit=0', '?limit=101', '?before=x', '?merchantId=1']) expect((await get(`${base}${query}`, owner.identity)).statusCode).toBe(400);
  });

  it('counts a pending intent past its expiry as expired, without moving it', async () => {
    const owner = await createShop(app, 'expiry-owner');
    const intent = (await createIntent(app, owner)).json();
    clock.advance(25 * 3600_000);
    const base = `/v1/projects/${owner.projectId}/payment-intents`;
    expect((await get(`${base}?status=pending`, owner.identity)).json().data).toEqual([]);
    const expired = (await get(`${base}?status=expired`, owner.identity)).json().data;
    expect(expired.map((i: { id: string; status: string }) => [i.id, i.status])).toEqual([[intent.id, 'expired']]);
  });
});
