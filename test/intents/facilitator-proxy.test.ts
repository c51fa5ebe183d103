import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, transfersTo } from './harness.js';

// FACILITATOR_URL points at a proxy in front of our facilitator that forwards /settle, lets the
// facilitator broadcast, and then answers 502 itself (an upstream timeout at a load balancer).

let app: TestApp;
let shop: Shop;
let proxy: http.Server;

beforeAll(async () => {
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      try {
        const upstream = await fetch(`${app.urls.facilitator}${req.url}`, {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: req.method === 'POST' ? Buffer.concat(chunks) : undefined,
        });
        const body = await upstream.text();
        if (req.url === '/settle') res.writeHead(502, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>');
        else res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(body);
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  app = await buildPayApp({ env: { FACILITATOR_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` } });
  shop = await createShop(app);
});
afterAll(async () => {
  await app?.close();
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
});

describe('a proxy 502 after the broadcast', () => {
  it('leaves the intent settling (settlement_result_unknown); a new authorization cannot charge twice; reconcile settles it', async () => {
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 200 })).json();
    const challenge = await challengeOf(app, intent.id);
    const before = await balanceOf(app, payer.address);

    const first = await pay(app, intent.id, { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(first.statusCode).toBe(503);
    expect(first.json()).toMatchObject({ code: 'settlement_result_unknown' });
    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(1);
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settling', failureCode: 'settlement_result_unknown' });

    // The payer signs a new authorization and tries again: refused, not charged again.
    const second = await pay(app, intent.id, { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ code: 'settlement_in_progress' });

    const settled = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.status === 'settled' ? body : null;
    });
    expect(settled).toMatchObject({ transactionHash: transfers[0].transactionHash });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
    expect(await balanceOf(app, payer.address)).toBe(before - 2_000_000n);
  });
});
