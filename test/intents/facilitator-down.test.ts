import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { buildPayApp, fundedPayer, getIntent, pay, signedHeader, transfersTo } from './harness.js';

// FACILITATOR_URL points at a port nobody listens on: verification cannot happen.

let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildPayApp({ env: { FACILITATOR_URL: `http://127.0.0.1:${await closedPort()}` } });
  shop = await createShop(app);
});
afterAll(async () => {
  await app?.close();
});

describe('facilitator unreachable', () => {
  it('answers 503 facilitator_unavailable with Retry-After; the intent stays pending and nothing moves', async () => {
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const response = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBeDefined();
    expect(response.json()).toMatchObject({ code: 'facilitator_unavailable' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', failureCode: null });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);
  });
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
