// Gas is money, accounted for: what each settle's transaction used, by the route that caused it, in
// /metrics; the relayer's float and its floors in /ready, /metrics and `tollgate status`. Below the public
// floor the doors anyone can use (the public /settle, the relay) stop first, while our own modules' settles
// go on; below the lower floor every settle stops. Nothing is sent past a floor: the chain says so.
import { encodePaymentSignatureHeader } from '@x402/core/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPaymentRequired } from '../../src/x402/client.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, randomAddress, relayerTxCount, signAuthorization } from '../x402/support.js';
import { createIntent, createShop } from '../intents/fixtures.js';
import { pay, signedHeader } from '../intents/harness.js';
import { credentialFor, post as relayPost } from '../relay/support.js';
import { challengeAndSign, jpegOf, newKey, storagePayer, upload, uploadForm } from '../storage/helpers.js';
import { requirementsFor } from './support.js';

const HUGE = (10n ** 30n).toString();

const settle = (app: TestApp, paymentPayload: unknown, paymentRequirements: unknown) =>
  app.origins.facilitator!.inject({ method: 'POST', url: '/settle', payload: { x402Version: 2, paymentPayload, paymentRequirements } as object });

async function payPing(app: TestApp) {
  const url = `${app.urls.api}/x402-test/ping`;
  const first = await fetch(url);
  const challenge = readPaymentRequired((n) => first.headers.get(n), await first.json());
  const payload = await signAuthorization(await fundedPayer(app, '1'), challenge.accepts[0]!);
  return fetch(url, { headers: { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payload) } });
}

const gasSpent = async (app: TestApp) => {
  const text = (await app.origins.api!.inject({ method: 'GET', url: '/metrics' })).body;
  return Object.fromEntries([...text.matchAll(/^tollgate_relayer_gas_spent_total\{([^}]*)\} (\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
};

describe('gas spent, by route and outcome', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp();
  });
  afterAll(async () => app?.close());

  it('a paid call and a public /settle each add the gas their transaction used under their own route; the float and floors are in /metrics and /ready', async () => {
    expect((await payPing(app)).status).toBe(200);
    const requirements = requirementsFor(app, '1000', randomAddress());
    expect((await settle(app, await signAuthorization(await fundedPayer(app, '1'), requirements), requirements)).json()).toMatchObject({ success: true });

    const spent = await gasSpent(app);
    expect(spent['route="/x402-test/ping",outcome="settled"']).toBeGreaterThan(40_000);
    expect(spent['route="/settle",outcome="settled"']).toBeGreaterThan(40_000);
    const text = (await app.origins.api!.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^tollgate_relayer_float_wei \d/m);
    expect(text).toContain('tollgate_relayer_gas_floor_wei{floor="public"} 5000000000000000');

    const ready = (await app.origins.facilitator!.inject({ method: 'GET', url: '/ready' })).json().data;
    expect(ready.checks['relayer-float']).toMatchObject({ ok: true, detail: { publicFloorWei: '5000000000000000', floorWei: '1000000000000000' } });
    expect(BigInt(ready.checks['relayer-float'].detail.floatWei)).toBeGreaterThan(10n ** 16n);
  });

  it('a payment-intent pay, a paid upload and a relay broadcast book their gas under their routes, not the worker', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop)).json();
    const payer = await fundedPayer(app, '20');
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);

    const key = newKey();
    const form = uploadForm(await jpegOf(10));
    const uploader = storagePayer();
    await app.ctx.chain.devchain!.fund(uploader.account.address, '1');
    const { headers } = await challengeAndSign(app, key, form, uploader);
    expect((await upload(app, key, form, { headers })).status).toBe(200);

    const relayed = await credentialFor(app);
    expect((await relayPost(app, '/v1/mpp/broadcast', relayed.body, { 'idempotency-key': newKey() })).status).toBe(200);

    const spent = await gasSpent(app);
    expect(spent['route="/v1/payment-intents/:intentId/pay",outcome="settled"']).toBeGreaterThan(40_000);
    expect(spent['route="/v1/mpp/broadcast",outcome="settled"']).toBeGreaterThan(40_000);
    expect(spent['route="/v1/ipfs/upload",outcome="settled"']).toBeGreaterThan(40_000);
    expect(spent['route="worker",outcome="settled"']).toBeUndefined();
  });
});

describe('below the public floor', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ env: { FACILITATOR_PUBLIC_GAS_FLOOR_WEI: HUGE } });
  });
  afterAll(async () => app?.close());

  it('the public /settle answers 503 relayer_gas_low and sends nothing; a paid call of ours still settles; /ready is degraded, not unready', async () => {
    const relayer = app.ctx.chain.relayer!.address;
    const requirements = requirementsFor(app, '1000', randomAddress());
    const payload = await signAuthorization(await fundedPayer(app, '1'), requirements);
    const before = await relayerTxCount(app, relayer);
    const refused = await settle(app, payload, requirements);
    expect([refused.statusCode, refused.json().error?.code]).toEqual([503, 'relayer_gas_low']);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(await relayerTxCount(app, relayer)).toBe(before);

    expect((await payPing(app)).status).toBe(200);
    expect(await relayerTxCount(app, relayer)).toBe(before + 1);

    const ready = await app.origins.facilitator!.inject({ method: 'GET', url: '/ready' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().data).toMatchObject({ status: 'degraded', failing: ['relayer-public-float'] });
    expect(ready.json().data.checks['relayer-public-float'].reason).toContain('the public /settle and the relay are stopped');
  });
});

describe('below the floor', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ env: { FACILITATOR_PUBLIC_GAS_FLOOR_WEI: HUGE, FACILITATOR_GAS_FLOOR_WEI: HUGE } });
  });
  afterAll(async () => app?.close());

  it('every settle stops before sending: a paid call answers 503; /ready is unready for the facilitator', async () => {
    const relayer = app.ctx.chain.relayer!.address;
    const before = await relayerTxCount(app, relayer);
    expect((await payPing(app)).status).toBe(503);
    expect(await relayerTxCount(app, relayer)).toBe(before);
    const ready = await app.origins.facilitator!.inject({ method: 'GET', url: '/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().data.failing).toContain('relayer-float');
  });
});
