// End to end on the devchain: a fresh key funded with `dev fund` pays /x402-test/ping through the
// @x402 client; the replay of the same signature is refused and moves nothing.
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { getAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPaymentRequired, readSettlement, signPayment } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, nonceOf, transfersForNonce } from './support.js';

let app: TestApp;
let pingUrl: string;

beforeAll(async () => {
  app = await buildTestApp();
  pingUrl = `${app.urls.api}/x402-test/ping`;
});
afterAll(async () => app?.close());

async function challenge(url = pingUrl): Promise<PaymentRequired> {
  const res = await fetch(url);
  expect(res.status).toBe(402);
  return readPaymentRequired((n) => res.headers.get(n), await res.json());
}

describe('GET /x402-test/ping', () => {
  it('answers 402 with the x402 v2 challenge in header and body', async () => {
    const res = await fetch(pingUrl);
    expect(res.status).toBe(402);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as PaymentRequired;
    expect(decodePaymentRequiredHeader(res.headers.get('payment-required')!)).toEqual(body);
    expect(body).toMatchObject({
      x402Version: 2,
      resource: { url: pingUrl, mimeType: 'application/json', serviceName: 'Tollgate' },
      accepts: [
        {
          scheme: 'exact',
          network: 'eip155:4663',
          asset: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168',
          amount: '100',
          maxTimeoutSeconds: 300,
          extra: { name: 'Global Dollar', version: '1' },
        },
      ],
    });
    expect(typeof body.resource.description).toBe('string');
    expect(getAddress(body.accepts[0].payTo)).toBe(body.accepts[0].payTo);
  });

  it('a funded fresh key pays 100 units and gets paid pong; the same payment again gets the same answer and moves nothing', async () => {
    const payer = await fundedPayer(app, '1');
    const pr = await challenge();
    const payTo = getAddress(pr.accepts[0].payTo);
    const [payerBefore, payToBefore] = [await balanceOf(app, payer.address), await balanceOf(app, payTo)];

    const { header, payload } = await signPayment(payer, pr);
    const paid = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ message: 'paid pong' });
    expect(paid.headers.get('cache-control')).toBe('no-store');
    expect(paid.headers.get('x-payment-response')).toBe(paid.headers.get('payment-response'));
    const settlement = readSettlement((n) => paid.headers.get(n));
    expect(settlement).toMatchObject({ success: true, network: 'eip155:4663', payer: payer.address });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 100n);
    expect(await balanceOf(app, payTo)).toBe(payToBefore + 100n);

    // A retry after a lost answer: one payment, one result, served again; nothing moves.
    const replay = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual({ message: 'paid pong' });
    expect(readSettlement((n) => replay.headers.get(n))).toEqual(settlement);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 100n);
    expect(await transfersForNonce(app, payer.address, nonceOf(payload))).toBe(1);

    // The same payment for another resource buys nothing: it paid for the ping.
    const elsewhere = await fetch(`${app.urls.api}/x402-test/demo`, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(elsewhere.status).toBe(402);
  });

  it('accepts the legacy X-PAYMENT header', async () => {
    const payer = await fundedPayer(app, '0.01');
    const { header } = await signPayment(payer, await challenge());
    const res = await fetch(pingUrl, { headers: { 'X-PAYMENT': header } });
    expect(res.status).toBe(200);
    expect(readSettlement((n) => res.headers.get(n)).success).toBe(true);
  });

  it('answers 400 in the direct family for a malformed payment header', async () => {
    for (const header of ['not base64 !', Buffer.from('{"x402Version":1}').toString('base64'), Buffer.from('[]').toString('base64')]) {
      const res = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_payment_header');
    }
  });

  it('refuses a payment that answers another resource', async () => {
    const payer = await fundedPayer(app, '0.01');
    const pr = await challenge();
    const { header } = await signPayment(payer, { ...pr, resource: { ...pr.resource, url: `${pingUrl}?other=1` } });
    const res = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(res.status).toBe(402);
    expect(((await res.json()) as PaymentRequired).error).toBe('no_matching_payment_requirements');
  });
});

describe('GET /x402-test/demo', () => {
  it('shows the requirement when unpaid and the settlement when paid', async () => {
    const url = `${app.urls.api}/x402-test/demo`;
    const pr = await challenge(url);
    const payer = await fundedPayer(app, '0.01');
    const { header } = await signPayment(payer, pr);
    const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      message: 'paid demo',
      requirement: pr.accepts[0],
      settlement: { success: true, network: 'eip155:4663', payer: payer.address },
      payer: payer.address,
    });
  });
});

describe('GET /dev/chain', () => {
  it('tells a client how to reach the devchain and the facilitator', async () => {
    const res = await fetch(`${app.urls.api}/dev/chain`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      rpcUrl: app.ctx.chain.rpcUrl,
      chainId: 4663,
      network: 'eip155:4663',
      asset: { address: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', symbol: 'USDG', decimals: 6, name: 'Global Dollar', version: '1' },
      facilitatorUrl: app.urls.facilitator,
    });
  });
});
