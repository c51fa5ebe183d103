// Bounds on the public facilitator (anyone can call it; every settle spends our relayer's gas):
// a positive amount, a capped timeout and an authorization window bounded by the chain's time, a
// payTo policy, settles per payer and per payTo counted in PostgreSQL; and a request missing a
// half answered in the x402 shape.
import type { PaymentRequirements } from '@x402/core/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/platform/clock.js';
import { readPaymentRequired, signPayment } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createShop } from '../intents/fixtures.js';
import { balanceOf, fundedPayer, randomAddress, relayerTxCount, signAuthorization } from '../x402/support.js';
import { post, requirementsFor } from './support.js';

const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
const relayerOf = (app: TestApp) => app.ctx.chain.relayer!.address;

describe('amount and time bounds', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp();
  });
  afterAll(async () => app?.close());

  /** Both endpoints refuse with `reason`; nothing is broadcast and nothing moves. */
  async function expectRefused(payload: unknown, requirements: unknown, reason: string, message: RegExp) {
    const txCount = await relayerTxCount(app, relayerOf(app));
    const verified = await post(app, 'verify', payload, requirements);
    expect(verified.body).toMatchObject({ isValid: false, invalidReason: reason });
    expect((verified.body as { invalidMessage?: string }).invalidMessage).toMatch(message);
    const settled = await post(app, 'settle', payload, requirements);
    expect(settled.body).toMatchObject({ success: false, errorReason: reason, transaction: '' });
    expect(await relayerTxCount(app, relayerOf(app))).toBe(txCount);
  }

  it('a zero amount is refused (requirements and authorization)', async () => {
    const payer = await fundedPayer(app, '1');
    const zero = requirementsFor(app, '0');
    await expectRefused(await signAuthorization(payer, zero), zero, 'invalid_payment_requirements', /amount must be greater than 0/);
    const requirements = requirementsFor(app, '100');
    const zeroValue = await signAuthorization(payer, requirements, { value: '0' });
    await expectRefused(zeroValue, requirements, 'invalid_exact_evm_payload_authorization_value_mismatch', /greater than 0/);
    expect(await balanceOf(app, payer.address)).toBe(1_000_000n);
  });

  it('a ten-year validBefore is refused: at most chain time + maxTimeoutSeconds + 60 s', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const tenYears = await signAuthorization(payer, requirements, { validBefore: nowSeconds() + 10n * 365n * 24n * 3600n });
    await expectRefused(tenYears, requirements, 'invalid_exact_evm_payload_authorization_valid_before', /too far ahead.*maxTimeoutSeconds \(300\) \+ 60 s/);
    // Within the skew: accepted.
    const skewed = await signAuthorization(payer, requirements, { validBefore: nowSeconds() + 300n + 50n });
    expect((await post(app, 'verify', skewed, requirements)).body).toEqual({ isValid: true, payer: payer.address });
  });

  it('maxTimeoutSeconds is capped at one hour', async () => {
    const payer = await fundedPayer(app, '1');
    const long = { ...requirementsFor(app), maxTimeoutSeconds: 7200 } as PaymentRequirements;
    await expectRefused(await signAuthorization(payer, long), long, 'invalid_payment_requirements', /maxTimeoutSeconds must be at most 3600/);
    const hour = { ...requirementsFor(app), maxTimeoutSeconds: 3600 } as PaymentRequirements;
    expect((await post(app, 'verify', await signAuthorization(payer, hour), hour)).body).toEqual({ isValid: true, payer: payer.address });
  });

  it('a request without paymentPayload or paymentRequirements answers 400 in the x402 shape', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app);
    const payload = await signAuthorization(payer, requirements);
    const send = (path: 'verify' | 'settle', body: object) =>
      fetch(`${app.urls.facilitator}/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await send('verify', { x402Version: 2, paymentRequirements: requirements })).toMatchObject({ status: 400, body: { isValid: false, invalidReason: 'invalid_payload' } });
    expect(await send('settle', { x402Version: 2, paymentRequirements: requirements })).toMatchObject({
      status: 400,
      body: { success: false, errorReason: 'invalid_payload', transaction: '', network: 'eip155:4663' },
    });
    expect(await send('verify', { x402Version: 2, paymentPayload: payload })).toMatchObject({ status: 400, body: { isValid: false, invalidReason: 'invalid_payment_requirements' } });
    expect(await send('settle', { x402Version: 2, paymentPayload: payload })).toMatchObject({ status: 400, body: { success: false, errorReason: 'invalid_payment_requirements' } });
  });
});

describe('payTo policy', () => {
  it('defaults: any on the embedded devchain, registered with CHAIN_RPC_URL', () => {
    expect(loadConfig({}).facilitatorPayTo).toEqual({ policy: 'any', sellers: [] });
    expect(loadConfig({ CHAIN_RPC_URL: 'https://rpc.example' }).facilitatorPayTo.policy).toBe('registered');
    expect(() => loadConfig({ FACILITATOR_SELLERS: '0x12' })).toThrow(/FACILITATOR_SELLERS/);
  });

  describe('registered', () => {
    const seller = randomAddress();
    let app: TestApp;
    beforeAll(async () => {
      app = await buildTestApp({ env: { FACILITATOR_PAY_TO_POLICY: 'registered', FACILITATOR_SELLERS: ` ${randomAddress()}, ${seller.toLowerCase()} ` } });
    });
    afterAll(async () => app?.close());

    it('refuses a payTo that is neither a merchant nor a configured seller (nothing sent); serves sellers, merchants and our own endpoints', async () => {
      const payer = await fundedPayer(app, '1');
      const stranger = requirementsFor(app, '100', randomAddress());
      const payload = await signAuthorization(payer, stranger);
      const txCount = await relayerTxCount(app, relayerOf(app));
      const verified = await post(app, 'verify', payload, stranger);
      expect(verified).toMatchObject({ status: 200, body: { isValid: false, invalidReason: 'invalid_payment_requirements' } });
      expect((verified.body as { invalidMessage: string }).invalidMessage).toMatch(/not served by this facilitator.*registered merchants and configured sellers/);
      expect((await post(app, 'settle', payload, stranger)).body).toMatchObject({ success: false, errorReason: 'invalid_payment_requirements', transaction: '' });
      expect(await relayerTxCount(app, relayerOf(app))).toBe(txCount);
      expect(await balanceOf(app, payer.address)).toBe(1_000_000n);

      const shop = await createShop(app);
      for (const payTo of [seller, shop.payTo]) {
        const requirements = requirementsFor(app, '100', payTo);
        const paid = await signAuthorization(payer, requirements);
        expect((await post(app, 'verify', paid, requirements)).body).toEqual({ isValid: true, payer: payer.address });
        expect((await post(app, 'settle', paid, requirements)).body).toMatchObject({ success: true });
      }
      // Our own paid endpoints call the engine in-process: the policy of the public origin is not theirs.
      const unpaid = await fetch(`${app.urls.api}/x402-test/ping`);
      const { header } = await signPayment(payer, readPaymentRequired((n) => unpaid.headers.get(n), await unpaid.json()));
      expect((await fetch(`${app.urls.api}/x402-test/ping`, { headers: { 'PAYMENT-SIGNATURE': header } })).status).toBe(200);
      expect(await balanceOf(app, payer.address)).toBe(1_000_000n - 300n);
    });
  });
});

describe('settles per payer and per payTo', () => {
  // Frozen at the real time, so the fixed window never rolls over mid-test.
  const clock = new ManualClock();
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ clock, env: { FACILITATOR_SETTLE_LIMIT_PER_PAYER: '2', FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: '3' } });
  });
  afterAll(async () => app?.close());

  let ip = 0;
  // Each from another client address: the per-client limit is not what is tested here.
  const settleFrom = async (payload: unknown, requirements: unknown) => {
    const res = await app.origins.facilitator!.inject({
      method: 'POST',
      url: '/settle',
      payload: { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements } as object,
      remoteAddress: `198.51.100.${++ip}`,
    });
    return { status: res.statusCode, body: res.json(), retryAfter: res.headers['retry-after'] };
  };

  it('a payer gets its budget of settles per window; forged payloads in its name do not spend it', async () => {
    const payer = await fundedPayer(app, '1');
    const forger = await fundedPayer(app, '0');
    for (let i = 0; i < 3; i++) {
      const requirements = requirementsFor(app);
      const forged = await signAuthorization(payer, requirements, { signer: forger });
      expect((await settleFrom(forged, requirements)).body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_signature' });
    }
    for (let i = 0; i < 2; i++) {
      const requirements = requirementsFor(app);
      expect((await settleFrom(await signAuthorization(payer, requirements), requirements)).body).toMatchObject({ success: true });
    }
    const txCount = await relayerTxCount(app, relayerOf(app));
    const requirements = requirementsFor(app);
    const limited = await settleFrom(await signAuthorization(payer, requirements), requirements);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: { code: 'rate_limited', message: expect.stringMatching(/payer/) } });
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect(await relayerTxCount(app, relayerOf(app))).toBe(txCount);
    expect(await balanceOf(app, payer.address)).toBe(1_000_000n - 200n);
  });

  it('a payTo gets its budget of settles per window, whoever pays', async () => {
    const payTo = randomAddress();
    const requirements = requirementsFor(app, '100', payTo);
    for (let i = 0; i < 3; i++) {
      const payer = await fundedPayer(app, '1');
      expect((await settleFrom(await signAuthorization(payer, requirements), requirements)).body).toMatchObject({ success: true });
    }
    const payer = await fundedPayer(app, '1');
    const limited = await settleFrom(await signAuthorization(payer, requirements), requirements);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: { code: 'rate_limited', message: expect.stringMatching(/payTo/) } });
    expect(await balanceOf(app, payTo)).toBe(300n);
  });
});
