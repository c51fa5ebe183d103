// Upload orders past the happy path: a verified payment left pending (as after a crash between claim
// and settle) is confirmed only by a transaction that really pays it — by the caller's reconcile or by
// the worker — and an unusable one is released; quotes and retention expire by the database's clock;
// the assets gateway serves ranges and cache headers and stops serving at expiry.
import { eq, sql } from 'drizzle-orm';
import type { PaymentPayload } from '@x402/core/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadOrders } from '../../src/modules/storage/tables.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { executeElsewhere, nonceOf, transfersForNonce } from '../x402/support.js';
import { challengeAndSign, jpegOf, newKey, readOrder, storagePayer, upload, uploadForm, type OrderBody } from './helpers.js';

let app: TestApp;
const devchain = () => app.ctx.chain.devchain!;

beforeAll(async () => {
  app = await buildTestApp({ env: { STORAGE_SWEEP_INTERVAL_MS: '200' } });
});
afterAll(async () => app?.close());

const orderIdOf = (url: string) => new URL(url).searchParams.get('orderId')!;

/** An order whose verified payment was claimed and never settled: what a crash after the claim leaves. */
async function pendingOrder(options: { validBefore?: string; pendingForSeconds?: number } = {}) {
  const payer = storagePayer();
  await devchain().fund(payer.account.address, '1');
  const image = await jpegOf(10);
  const key = newKey();
  const { payload, required, headers } = await challengeAndSign(app, key, uploadForm(image), payer);
  const id = orderIdOf(required.resource.url);
  const { authorization } = payload.payload as { authorization: { from: string; nonce: string; validBefore: string } };
  await app.ctx.db
    .update(uploadOrders)
    .set({
      status: 'payment_pending',
      payer: authorization.from.toLowerCase(),
      authorizationNonce: authorization.nonce.toLowerCase(),
      authorizationValidBefore: options.validBefore ?? authorization.validBefore,
      pendingSince: sql`now() - make_interval(secs => ${options.pendingForSeconds ?? 0})`,
    })
    .where(eq(uploadOrders.id, id));
  return { payer, image, key, id, payload: payload as PaymentPayload, headers, required };
}

const reconcile = (id: string, key: string, transactionHash: string) =>
  fetch(`${app.urls.api}/v1/ipfs/orders/${id}/reconcile`, {
    method: 'POST',
    headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ transactionHash }),
  });

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('a pending payment', () => {
  it('refuses a new signature and another upload while pending (409), and reconcile accepts only the transaction that pays it', async () => {
    const { image, key, id, payload, headers, payer, required } = await pendingOrder();
    const secondPayment = payer.http.encodePaymentSignatureHeader(await payer.http.createPaymentPayload(required)) as Record<string, string>;
    for (const attempt of [headers, secondPayment, {}]) {
      const again = await upload(app, key, uploadForm(image), { headers: attempt });
      expect(again.status).toBe(409);
      expect(await again.json()).toMatchObject({ data: { reason: 'payment_pending' } });
    }

    expect((await reconcile(id, key, 'not-a-hash')).status).toBe(400);
    expect((await reconcile(id, newKey(), `0x${'11'.repeat(32)}`)).status).toBe(404);
    // Not on chain; then a real transaction that moves USDG to someone else: both unrelated.
    expect((await reconcile(id, key, `0x${'11'.repeat(32)}`)).status).toBe(409);
    const unrelated = await devchain().fund(storagePayer().account.address, '0.005');
    const refused = await reconcile(id, key, unrelated);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ data: { reason: 'payment_not_confirmed' } });
    expect((await readOrder(app, id, key)).body.data.status).toBe('payment_pending');

    const receipt = await executeElsewhere(app, payload);
    const confirmed = await reconcile(id, key, receipt.transactionHash);
    expect(confirmed.status).toBe(200);
    const paid = ((await confirmed.json()) as { data: OrderBody }).data;
    // Reconcile never uploads: the order is paid, with no image fields yet.
    expect(paid).toMatchObject({ id, status: 'paid', transactionHash: receipt.transactionHash, cid: null, url: null, expiresAt: null });
    expect((await reconcile(id, key, receipt.transactionHash)).status).toBe(200);

    // Redeemed by repeating the upload: no signature, no second transfer.
    const redeemed = await upload(app, key, uploadForm(image));
    expect(redeemed.status).toBe(200);
    expect(((await redeemed.json()) as { data: OrderBody }).data).toMatchObject({ id, status: 'fulfilled' });
    expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
  });

  it('the worker confirms a pending payment from the chain, without a transaction hash from anyone', async () => {
    const { key, id, payload, payer } = await pendingOrder({ pendingForSeconds: 120 });
    const receipt = await executeElsewhere(app, payload);
    const order = await eventually(() => readOrder(app, id, key), (o) => o.body.data.status === 'paid');
    expect(order.body.data).toMatchObject({ status: 'paid', transactionHash: receipt.transactionHash });
    expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
  });

  it('the worker releases a pending payment whose authorization can never be used (unused past validBefore)', async () => {
    const { key, id, image } = await pendingOrder({ pendingForSeconds: 120, validBefore: '1' });
    const order = await eventually(() => readOrder(app, id, key), (o) => o.body.data.status === 'awaiting_payment');
    expect(order.body.data.status).toBe('awaiting_payment');
    expect((await upload(app, key, uploadForm(image))).status).toBe(402);
  });
});

describe('expiry by the database clock', () => {
  it('an unpaid quote past quoteExpiresAt answers 410, paid or not', async () => {
    const payer = storagePayer();
    await devchain().fund(payer.account.address, '1');
    const image = await jpegOf(10);
    const key = newKey();
    const { required, headers } = await challengeAndSign(app, key, uploadForm(image), payer);
    await app.ctx.db.update(uploadOrders).set({ quoteExpiresAt: sql`now() - interval '1 second'` }).where(eq(uploadOrders.id, orderIdOf(required.resource.url)));
    for (const attempt of [{}, headers]) {
      const res = await upload(app, key, uploadForm(image), { headers: attempt });
      expect(res.status).toBe(410);
    }
    expect((await devchain().balanceOf(payer.account.address))).toBe(1_000_000n);
  });

  it('at the end of retention the gateway stops serving, the image fields disappear, and the sweep marks it expired', async () => {
    const { image, key, url, id } = await fulfilledOrder();
    expect((await fetch(url)).status).toBe(200);
    await app.ctx.db.update(uploadOrders).set({ expiresAt: sql`now() - interval '1 second'` }).where(eq(uploadOrders.id, id));
    expect((await fetch(url)).status).toBe(404);
    const order = await eventually(() => app.ctx.db.select().from(uploadOrders).where(eq(uploadOrders.id, id)), ([row]) => row!.status === 'expired');
    expect(order[0]!.status).toBe('expired');
    expect((await readOrder(app, id, key)).body.data).toMatchObject({ status: 'expired', cid: null, ipfsUri: null, url: null });
    expect((await upload(app, key, uploadForm(image))).status).toBe(410);
  });
});

async function fulfilledOrder() {
  const payer = storagePayer();
  await devchain().fund(payer.account.address, '1');
  const image = await jpegOf(40);
  const key = newKey();
  const { headers, required } = await challengeAndSign(app, key, uploadForm(image), payer);
  const res = await upload(app, key, uploadForm(image), { headers });
  expect(res.status).toBe(200);
  const order = ((await res.json()) as { data: OrderBody }).data;
  expect(order.status).toBe('fulfilled');
  return { image, key, id: orderIdOf(required.resource.url), url: order.url!, cid: order.cid! };
}

describe('the assets gateway', () => {
  it('serves the image with its type, ETag, immutable caching, nosniff and a restrictive CSP; ranges; 304; HEAD', async () => {
    const { image, url, cid } = await fulfilledOrder();
    const full = await fetch(url);
    expect(full.status).toBe(200);
    expect(Object.fromEntries(['content-type', 'etag', 'cache-control', 'x-content-type-options', 'accept-ranges', 'content-length'].map((h) => [h, full.headers.get(h)]))).toEqual({
      'content-type': 'image/jpeg',
      etag: `"${cid}"`,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
      'accept-ranges': 'bytes',
      'content-length': String(image.length),
    });
    expect(full.headers.get('content-security-policy')).toMatch(/default-src 'none'.*sandbox/);
    await full.arrayBuffer();

    const part = await fetch(url, { headers: { range: 'bytes=100-1099' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 100-1099/${image.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(image.subarray(100, 1100))).toBe(true);
    const tail = await fetch(url, { headers: { range: 'bytes=-10' } });
    expect(Buffer.from(await tail.arrayBuffer()).equals(image.subarray(image.length - 10))).toBe(true);
    const beyond = await fetch(url, { headers: { range: `bytes=${image.length}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${image.length}`);

    for (const validator of [`"${cid}"`, `W/"${cid}"`, `"other", "${cid}"`, '*']) {
      expect((await fetch(url, { headers: { 'if-none-match': validator } })).status, validator).toBe(304);
    }
    expect((await fetch(url, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
    const head = await fetch(url, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-length')]).toEqual([200, String(image.length)]);
  });

  it('404 for a CID no order keeps, and for anything that is not a CID', async () => {
    expect((await fetch(`${app.urls.assets}/ipfs/bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy`)).status).toBe(404);
    expect((await fetch(`${app.urls.assets}/ipfs/..%2F..%2Fetc%2Fpasswd`)).status).toBe(404);
  });
});

