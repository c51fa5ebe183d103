// Storage on a Kubo node (IPFS_API_URL), here a local stand-in speaking Kubo's RPC: a storage failure
// after the money moved leaves the order paid (502), and repeating the upload stores it with no second
// transfer; with the node down, the config says unavailable and uploads answer 503 before any payment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { nonceOf, transfersForNonce } from '../x402/support.js';
import { startKuboStandIn, type KuboStandIn } from './kubo-stand-in.js';
import { challengeAndSign, jpegOf, newKey, PRICE, rawCidOf, readOrder, storagePayer, upload, uploadForm, type OrderBody } from './helpers.js';

let kubo: KuboStandIn;
let app: TestApp;

beforeAll(async () => {
  kubo = await startKuboStandIn();
  app = await buildTestApp({ env: { IPFS_API_URL: kubo.url } });
});
afterAll(async () => {
  await app?.close();
  await kubo?.close();
});

describe('uploads stored on a Kubo node', () => {
  it('a storage failure injected after settle: 502, order paid; repeating the upload fulfils it with no second transfer', async () => {
    const payer = storagePayer();
    await app.ctx.chain.devchain!.fund(payer.account.address, '1');
    const image = await jpegOf(60);
    const key = newKey();
    const { payload, headers, required } = await challengeAndSign(app, key, uploadForm(image), payer);
    const orderId = new URL(required.resource.url).searchParams.get('orderId')!;
    const payTo = required.accepts[0]!.payTo as `0x${string}`;
    const before = await app.ctx.chain.devchain!.balanceOf(payTo);

    kubo.failNext(1, 'add');
    const failed = await upload(app, key, uploadForm(image), { headers });
    expect(failed.status).toBe(502);
    expect(await failed.json()).toMatchObject({ code: 1011, data: { reason: 'storage_failed' } });
    expect(failed.headers.get('payment-response')).toBeTruthy();
    expect((await readOrder(app, orderId, key)).body.data).toMatchObject({ status: 'paid', cid: null, url: null, expiresAt: null });
    expect((await app.ctx.chain.devchain!.balanceOf(payTo)) - before).toBe(PRICE);

    const redeemed = await upload(app, key, uploadForm(image));
    expect(redeemed.status).toBe(200);
    const order = ((await redeemed.json()) as { data: OrderBody }).data;
    expect(order).toMatchObject({ id: orderId, status: 'fulfilled', cid: rawCidOf(image) });
    expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
    expect((await app.ctx.chain.devchain!.balanceOf(payTo)) - before).toBe(PRICE);

    // Served from the node's blocks.
    const served = await fetch(order.url!);
    expect(Buffer.from(await served.arrayBuffer()).equals(image)).toBe(true);
  });

  it('with the node down, config says unavailable and an upload answers 503 without a challenge', async () => {
    kubo.setDown(true);
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_100)); // past the availability cache
      const config = (await (await fetch(`${app.urls.api}/v1/ipfs/config`)).json()) as { data: { available: boolean } };
      expect(config.data.available).toBe(false);
      const res = await upload(app, newKey(), uploadForm(await jpegOf(5)));
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 1012, data: { reason: 'upload_unavailable' } });
    } finally {
      kubo.setDown(false);
    }
  });
});
