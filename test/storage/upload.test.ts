// Paid image storage end to end on the devchain: the official @x402/fetch client pays an upload,
// the assets origin serves the exact bytes under a CID computed independently, and every refusal of
// the spec's errors table comes with nothing charged. Balances and transfers are read from the chain.
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { nonceOf, transfersForNonce } from '../x402/support.js';
import { challengeAndSign, jpegOf, newKey, pngOf, PRICE, rawCidOf, readOrder, storagePayer, upload, uploadForm, USDG, NETWORK, type OrderBody } from './helpers.js';

let app: TestApp;
let payTo: Address;
const devchain = () => app.ctx.chain.devchain!;

beforeAll(async () => {
  app = await buildTestApp();
  const config = (await (await fetch(`${app.urls.api}/v1/ipfs/config`)).json()) as { data: { available: boolean } };
  expect(config.data.available).toBe(true);
});
afterAll(async () => app?.close());

async function fundedPayer() {
  const payer = storagePayer();
  await devchain().fund(payer.account.address, '1');
  return payer;
}

describe('GET /v1/ipfs/config', () => {
  it('answers the spec configuration in an envelope, available when store and facilitator are', async () => {
    const res = await fetch(`${app.urls.api}/v1/ipfs/config`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      code: 0,
      message: 'ok',
      data: {
        available: true,
        upload: { priceUsd: '0.005', maxFileBytes: 5_000_000, maxPixels: 16_000_000, mimeTypes: ['image/jpeg', 'image/png', 'image/webp'], retentionDays: 365 },
        delivery: { included: true, renewalsAvailable: false },
      },
    });
  });
});

describe('upload paid with the official @x402/fetch client', () => {
  it('402 → pay → fulfilled; the gateway serves the exact bytes under the independently computed CID; a retry is free', async () => {
    const payer = await fundedPayer();
    const image = await jpegOf(100);
    const key = newKey();
    const first = await upload(app, key, uploadForm(image));
    expect(first.status).toBe(402);
    const challenge = (await first.json()) as { resource: { url: string }; accepts: Array<{ payTo: Address }> } & Parameters<typeof payer.http.getPaymentRequiredResponse>[1];
    expect(challenge).toMatchObject({ x402Version: 2, accepts: [{ scheme: 'exact', network: NETWORK, asset: USDG, amount: '5000', extra: { name: 'Global Dollar', version: '1' } }] });
    expect(first.headers.get('payment-required')).toBeTruthy();
    const orderId = new URL(challenge.resource.url).searchParams.get('orderId')!;
    expect(challenge.resource.url).toBe(`${app.urls.api}/v1/ipfs/upload?orderId=${orderId}`);
    payTo = challenge.accepts[0].payTo;
    const required = payer.http.getPaymentRequiredResponse((name) => first.headers.get(name), challenge);

    const before = await devchain().balanceOf(payTo);
    const pay = wrapFetchWithPayment(fetch, payer.http);
    const paid = await pay(`${app.urls.api}/v1/ipfs/upload?orderId=${orderId}`, { method: 'POST', headers: { 'idempotency-key': key }, body: uploadForm(image) });
    const body = (await paid.json()) as { code: number; data: OrderBody };
    expect(paid.status, JSON.stringify(body)).toBe(200);
    const settlement = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: NETWORK, payer: payer.account.address });
    const cid = rawCidOf(image);
    expect(body).toMatchObject({
      code: 0,
      data: { id: orderId, status: 'fulfilled', amountAtomic: '5000', retentionDays: 365, transactionHash: settlement.transaction.toLowerCase(), cid, ipfsUri: `ipfs://${cid}`, url: `${app.urls.assets}/ipfs/${cid}` },
    });
    const storedYear = Date.parse(body.data.expiresAt!) - Date.now();
    expect(storedYear).toBeGreaterThan(364 * 86_400_000);
    expect(storedYear).toBeLessThan(366 * 86_400_000);
    expect((await devchain().balanceOf(payTo)) - before).toBe(PRICE);

    const served = await fetch(body.data.url!);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/jpeg');
    expect(Buffer.from(await served.arrayBuffer()).equals(image)).toBe(true);

    // Same key, same bytes: the same order, not charged again (with or without the payment header).
    for (const headers of [{}, payer.http.encodePaymentSignatureHeader(await payer.http.createPaymentPayload(required))]) {
      const retry = await upload(app, key, uploadForm(image), { headers: headers as Record<string, string> });
      expect(retry.status).toBe(200);
      expect(((await retry.json()) as { data: OrderBody }).data).toMatchObject({ id: orderId, status: 'fulfilled', cid });
    }
    expect((await devchain().balanceOf(payTo)) - before).toBe(PRICE);
    expect((await readOrder(app, orderId, key)).body.data).toMatchObject({ id: orderId, status: 'fulfilled', cid });
  });

  it('a different image under the key → 409, and the order keeps its image', async () => {
    const key = newKey();
    const image = await jpegOf(20);
    expect((await upload(app, key, uploadForm(image))).status).toBe(402);
    const other = await upload(app, key, uploadForm(await jpegOf(20)));
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ code: 1005, data: { reason: 'changed_file' } });
    expect((await upload(app, key, uploadForm(image))).status).toBe(402);
  });
});

describe('one payment, one order', () => {
  it('20 concurrent uploads with one key and one payment → one order, one transfer', async () => {
    const payer = await fundedPayer();
    const image = await jpegOf(30);
    const key = newKey();
    const { payload, headers, required } = await challengeAndSign(app, key, uploadForm(image), payer);
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    const answers = await Promise.all(Array.from({ length: 20 }, () => upload(app, key, uploadForm(image), { headers })));
    const statuses = answers.map((a) => a.status);
    await Promise.all(answers.map((a) => a.arrayBuffer()));
    expect(statuses.filter((s) => s === 200).length, statuses.join(',')).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409), statuses.join(',')).toBe(true);
    expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
    expect((await readOrder(app, orderId, key)).body.data.status).toBe('fulfilled');
  });

  it('20 concurrent first uploads with one key → one order', async () => {
    const image = await jpegOf(10);
    const key = newKey();
    const answers = await Promise.all(Array.from({ length: 20 }, () => upload(app, key, uploadForm(image))));
    const urls = await Promise.all(answers.map(async (a) => (expect(a.status).toBe(402), ((await a.json()) as { resource: { url: string } }).resource.url)));
    expect(new Set(urls).size).toBe(1);
  });

  it('one authorization cannot fund two orders: a payment signed for order A is refused by order B', async () => {
    const payer = await fundedPayer();
    const imageA = await jpegOf(10);
    const keyA = newKey();
    const { headers, payload } = await challengeAndSign(app, keyA, uploadForm(imageA), payer);
    const keyB = newKey();
    const imageB = await jpegOf(10);
    const challengeB = await upload(app, keyB, uploadForm(imageB));
    expect(challengeB.status).toBe(402);
    const orderB = new URL(((await challengeB.json()) as { resource: { url: string } }).resource.url).searchParams.get('orderId')!;
    const stolen = await upload(app, keyB, uploadForm(imageB), { headers });
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ code: 1000, data: { reason: 'invalid_payment' } });
    // Still good for the order it was signed for.
    expect((await upload(app, keyA, uploadForm(imageA), { headers })).status).toBe(200);
    // The same authorization re-wrapped for order B (the resource URL is not signed): refused, no second transfer.
    const rewrapped = { ...payload, resource: { ...payload.resource!, url: `${app.urls.api}/v1/ipfs/upload?orderId=${orderB}` } };
    const replay = await upload(app, keyB, uploadForm(imageB), { headers: payer.http.encodePaymentSignatureHeader(rewrapped) as Record<string, string> });
    expect([402, 409]).toContain(replay.status);
    expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
    expect((await readOrder(app, orderB, keyB)).body.data.status).toBe('awaiting_payment');
  });
});

describe('a payment the facilitator refuses', () => {
  it('an unfunded payer: 402 with the reason, the order free again, and a good payment then fulfils it', async () => {
    const image = await jpegOf(10);
    const key = newKey();
    const broke = storagePayer();
    const { headers, required } = await challengeAndSign(app, key, uploadForm(image), broke);
    const refused = await upload(app, key, uploadForm(image), { headers });
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ x402Version: 2, error: expect.stringContaining('insufficient') });
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    expect((await readOrder(app, orderId, key)).body.data.status).toBe('awaiting_payment');
    const payer = await fundedPayer();
    const good = payer.http.encodePaymentSignatureHeader(await payer.http.createPaymentPayload(required)) as Record<string, string>;
    expect((await upload(app, key, uploadForm(image), { headers: good })).status).toBe(200);
  });
});

describe('keys and orders', () => {
  it('the key is required and must be a UUID; orderId must be the key’s order; reads need the key', async () => {
    const image = await pngOf();
    expect((await upload(app, null, uploadForm(image, 'image/png', 'a.png'))).status).toBe(400);
    expect((await upload(app, 'not-a-uuid', uploadForm(image, 'image/png', 'a.png'))).status).toBe(400);
    const key = newKey();
    const first = await upload(app, key, uploadForm(image, 'image/png', 'a.png'));
    const orderId = new URL(((await first.json()) as { resource: { url: string } }).resource.url).searchParams.get('orderId')!;
    expect((await upload(app, key, uploadForm(image, 'image/png', 'a.png'), { orderId: crypto.randomUUID() })).status).toBe(404);
    expect((await upload(app, newKey(), uploadForm(image, 'image/png', 'a.png'), { orderId })).status).toBe(404);
    expect((await upload(app, key, uploadForm(image, 'image/png', 'a.png'), { orderId })).status).toBe(402);
    const read = await readOrder(app, orderId, key);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id: orderId, status: 'awaiting_payment', transactionHash: null, expiresAt: null, cid: null, ipfsUri: null, url: null, paymentUrl: `${app.urls.api}/v1/ipfs/upload?orderId=${orderId}` });
    expect((await readOrder(app, orderId, newKey())).status).toBe(404);
  });
});
