// The public /settle and /verify are limited per client address (each settle spends the relayer's
// gas); our own paid endpoints call the facilitator in-process and are not limited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, relayerTxCount, signAuthorization } from '../x402/support.js';
import { requirementsFor } from './support.js';

// Frozen at the real time (the devchain's), so the fixed window never rolls over mid-test.
const clock = new ManualClock();
let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ clock, env: { FACILITATOR_SETTLE_LIMIT_PER_CLIENT: '1', FACILITATOR_VERIFY_LIMIT_PER_CLIENT: '2' } });
});
afterAll(async () => app?.close());

const post = (path: 'verify' | 'settle', body: unknown, remoteAddress: string) =>
  app.origins.facilitator!.inject({ method: 'POST', url: `/${path}`, payload: body as object, remoteAddress });

describe('facilitator rate limits', () => {
  it('answers 429 rate_limited with Retry-After once a client exceeds the settle limit; nothing is broadcast', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const body = async () => ({ x402Version: 2, paymentPayload: await signAuthorization(payer, requirements), paymentRequirements: requirements });
    expect((await post('settle', await body(), '198.51.100.7')).json()).toMatchObject({ success: true });

    const relayer = app.ctx.chain.relayer!.address;
    const txCount = await relayerTxCount(app, relayer);
    const before = await balanceOf(app, payer.address);
    const limited = await post('settle', await body(), '198.51.100.7');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: { code: 'rate_limited', message: expect.any(String) } });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(await relayerTxCount(app, relayer)).toBe(txCount);
    expect(await balanceOf(app, payer.address)).toBe(before);

    // Another client has its own budget.
    expect((await post('settle', await body(), '198.51.100.8')).json()).toMatchObject({ success: true });
  });

  it('limits /verify per client separately', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const body = { x402Version: 2, paymentPayload: await signAuthorization(payer, requirements), paymentRequirements: requirements };
    for (let i = 0; i < 2; i++) expect((await post('verify', body, '203.0.113.5')).json()).toMatchObject({ isValid: true });
    const limited = await post('verify', body, '203.0.113.5');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ error: { code: 'rate_limited' } });
    expect(limited.headers['retry-after']).toBeDefined();
  });

  it('does not limit our own paid endpoints (in-process facilitator)', async () => {
    const payer = await fundedPayer(app, '1');
    const pingUrl = `${app.urls.api}/x402-test/ping`;
    for (let i = 0; i < 3; i++) {
      const unpaid = await fetch(pingUrl);
      const { header } = await signPayment(payer, readPaymentRequired((n) => unpaid.headers.get(n), await unpaid.json()));
      const paid = await fetch(pingUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(paid.status).toBe(200);
    }
    expect(await balanceOf(app, payer.address)).toBe(1_000_000n - 300n);
  });
});
