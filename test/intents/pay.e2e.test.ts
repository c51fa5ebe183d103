import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { USDG_ADDRESS } from '../../src/chain/registry.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';
import { balanceOf, buildPayApp, fundedPayer, getIntent, pay, signedHeader, transfersTo } from './harness.js';

// The whole flow on the devchain, over real HTTP: user → project → key → merchant → intent → 402 →
// signed pay → settled, and the money moved exactly once.

let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildPayApp();
  shop = await createShop(app, 'merchant-owner');
});
afterAll(async () => {
  await app?.close();
});

describe('pay end to end', () => {
  it('settles an intent with a signed x402 payment and moves exactly amountUsdCents × 10,000', async () => {
    const payer = await fundedPayer(app, '500');
    const created = await fetch(`${app.urls.api}/v1/payment-intents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents: 1234, externalId: 'order-e2e-1', description: 'E2E order' }),
    });
    expect(created.status).toBe(201);
    const intent = (await created.json()) as { id: string; paymentUrl: string };
    expect(intent.paymentUrl).toBe(`${app.urls.api}/v1/payment-intents/${intent.id}/pay`);

    const challenge = await fetch(intent.paymentUrl, { method: 'POST' });
    expect(challenge.status).toBe(402);
    expect(challenge.headers.get('cache-control')).toBe('no-store');
    const body = (await challenge.json()) as PaymentRequired;
    expect(decodePaymentRequiredHeader(challenge.headers.get('payment-required')!)).toEqual(body);
    expect(body).toEqual({
      x402Version: 2,
      error: 'Payment required',
      resource: { url: intent.paymentUrl, description: 'E2E order', mimeType: 'application/json', serviceName: 'Tollgate' },
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:4663',
          asset: USDG_ADDRESS,
          amount: '12340000',
          payTo: shop.payTo,
          maxTimeoutSeconds: 300,
          extra: { name: 'Global Dollar', version: '1' },
        },
      ],
    });

    const payToBefore = await balanceOf(app, shop.payTo);
    const payerBefore = await balanceOf(app, payer.address);
    const { header } = await signPayment(payer, readPaymentRequired((n) => challenge.headers.get(n), body));
    const paid = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('cache-control')).toBe('no-store');
    const settlement = (await paid.json()) as { settlement: { transaction: string; settledAt: string } };
    const transaction = settlement.settlement.transaction;
    expect(transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(settlement).toEqual({
      id: intent.id,
      status: 'settled',
      amountUsdCents: 1234,
      currency: 'USD',
      settlement: { transaction, network: 'eip155:4663', payer: payer.address, settledAt: expect.any(String) },
    });
    const response = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(response).toMatchObject({ success: true, transaction, network: 'eip155:4663', payer: payer.address });
    expect(paid.headers.get('x-payment-response')).toBe(paid.headers.get('payment-response'));

    const stored = await getIntent(app, shop.apiKey, intent.id);
    expect(stored).toMatchObject({ status: 'settled', transactionHash: transaction, settledAt: settlement.settlement.settledAt, failureCode: null });
    expect(await balanceOf(app, shop.payTo)).toBe(payToBefore + 1234n * 10_000n);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 12_340_000n);

    // Retries answer with the existing result and never pay again: the same header, a new
    // signature, and a bare request.
    const again = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(settlement);
    const fresh = await signPayment(payer, body);
    const third = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': fresh.header } });
    expect(await third.json()).toEqual(settlement);
    const bare = await fetch(intent.paymentUrl, { method: 'POST' });
    expect(bare.status).toBe(200);
    expect(decodePaymentResponseHeader(bare.headers.get('payment-response')!)).toMatchObject({ success: true, transaction });
    expect(await balanceOf(app, shop.payTo)).toBe(payToBefore + 12_340_000n);
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
  });

  it('accepts the legacy X-PAYMENT header', async () => {
    const payer = await fundedPayer(app, '50');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const paid = await pay(app, intent.id, { 'x-payment': await signedHeader(app, intent.id, payer) });
    expect(paid.statusCode).toBe(200);
    expect(paid.json()).toMatchObject({ status: 'settled', amountUsdCents: 100 });
  });

  it('refuses an authorization already used by another intent, before anything is broadcast', async () => {
    const payer = await fundedPayer(app, '50');
    const first = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const second = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const header = await signedHeader(app, first.id, payer);
    expect((await pay(app, first.id, { 'payment-signature': header })).statusCode).toBe(200);
    const transfers = (await transfersTo(app, shop.payTo)).length;
    const payerBalance = await balanceOf(app, payer.address);

    const reused = await pay(app, second.id, { 'payment-signature': header });
    expect(reused.statusCode).toBe(409);
    expect(reused.json()).toMatchObject({ code: 'payment_authorization_already_used' });
    expect(await getIntent(app, shop.apiKey, second.id)).toMatchObject({ status: 'pending', transactionHash: null });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(transfers);
    expect(await balanceOf(app, payer.address)).toBe(payerBalance);
  });

  it('answers 402 with the reason for an invalid payment and leaves the intent payable', async () => {
    const poor = await fundedPayer(app, '0.01');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const refused = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, poor) });
    expect(refused.statusCode).toBe(402);
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.json().error).toMatch(/insufficient_balance|simulation_failed/);
    expect(refused.json().accepts[0].amount).toBe('1000000');
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending' });

    // A payment signed for another amount does not match this intent's challenge.
    const payer = await fundedPayer(app, '50');
    const other = (await createIntent(app, shop, { amountUsdCents: 200 })).json();
    const mismatched = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, other.id, payer) });
    expect(mismatched.statusCode).toBe(402);
    expect(mismatched.json().error).toBe('No matching payment requirements');
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
  });

  it('answers 409 intent_conflict for a malformed payment header', async () => {
    const intent = (await createIntent(app, shop)).json();
    for (const header of ['not base64 !!', Buffer.from('{"x402Version":2}').toString('base64'), Buffer.from('[]').toString('base64')]) {
      const response = await pay(app, intent.id, { 'payment-signature': header });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'intent_conflict', details: { reason: 'malformed_payment' } });
    }
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending' });
  });

  it('refuses a request that carries a project API key with 400 invalid_request', async () => {
    const intent = (await createIntent(app, shop)).json();
    const response = await pay(app, intent.id, { authorization: `Bearer ${shop.apiKey}` });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'invalid_request' });
  });

  it('answers 404 intent_not_found for unknown intents', async () => {
    for (const id of ['00000000-0000-7000-8000-000000000000', 'nope']) {
      const response = await pay(app, id);
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ code: 'intent_not_found' });
    }
  });

  it('answers 403 merchant_disabled once the merchant is disabled after creation, and settled intents keep answering', async () => {
    const mine = await createShop(app);
    const payer = await fundedPayer(app, '50');
    const settledIntent = (await createIntent(app, mine, { amountUsdCents: 100 })).json();
    expect((await pay(app, settledIntent.id, { 'payment-signature': await signedHeader(app, settledIntent.id, payer) })).statusCode).toBe(200);
    const open = (await createIntent(app, mine, { amountUsdCents: 100 })).json();
    const header = await signedHeader(app, open.id, payer);

    await app.ctx.services.projects.setMerchantEnabled(mine.merchantId, false);
    for (const headers of [{}, { 'payment-signature': header }] as Record<string, string>[]) {
      const response = await pay(app, open.id, headers);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toMatchObject({ code: 'merchant_disabled' });
    }
    expect((await pay(app, settledIntent.id)).statusCode).toBe(200);
    await app.ctx.services.projects.setMerchantEnabled(mine.merchantId, true);
    expect((await pay(app, open.id, { 'payment-signature': header })).statusCode).toBe(200);
  });
});
