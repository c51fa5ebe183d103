import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from './fixtures.js';

// Public pay attempts are limited per client address (every request) and per intent (payments that
// verify against it: blocking.test.ts), in fixed windows.

const clock = new ManualClock('2026-01-01T00:00:10Z');
let app: TestApp;
let shop: Shop;

beforeAll(async () => {
  app = await buildTestApp({
    roles: ['api'],
    clock,
    env: { INTENT_PAY_LIMIT_PER_CLIENT: '5', INTENT_PAY_LIMIT_PER_INTENT: '3', INTENT_PAY_LIMIT_WINDOW_SECONDS: '60' },
  });
  shop = await createShop(app);
});
afterAll(async () => {
  await app?.close();
});

const pay = (intentId: string, remoteAddress: string, headers: Record<string, string> = {}) =>
  app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intentId}/pay`, remoteAddress, headers });

describe('pay rate limits', () => {
  it('limits each client address, with Retry-After until the window ends', async () => {
    const intent = (await createIntent(app, shop)).json();
    for (let i = 0; i < 5; i++) expect((await pay(intent.id, '198.51.100.1')).statusCode).toBe(402);
    const limited = await pay(intent.id, '198.51.100.1');
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ code: 'rate_limited', details: { scope: 'client' } });
    expect(limited.headers['retry-after']).toBe('50');
    // Unknown intents count too: the limit protects the lookup itself.
    expect((await pay('00000000-0000-7000-8000-000000000000', '198.51.100.1')).statusCode).toBe(429);
    // Another client is unaffected; the next window starts afresh.
    expect((await pay(intent.id, '198.51.100.2')).statusCode).toBe(402);
    clock.advance(50_000);
    expect((await pay(intent.id, '198.51.100.1')).statusCode).toBe(402);
  });

  it('counts junk payment headers against their senders only, never against the intent', async () => {
    const intent = (await createIntent(app, shop)).json();
    const junk = { 'payment-signature': 'bm90LWEtcGF5bWVudA==' };
    // Three times the intent's limit, from clients that each stay under theirs.
    for (let i = 0; i < 9; i++) expect((await pay(intent.id, `203.0.113.${i}`, junk)).statusCode).toBe(409);
    // One sender past its own limit is refused, scope client; the intent is not.
    for (let i = 0; i < 5; i++) expect((await pay(intent.id, '203.0.113.9', junk)).statusCode).toBe(409);
    const limited = await pay(intent.id, '203.0.113.9', junk);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ code: 'rate_limited', details: { scope: 'client' } });
    expect((await pay(intent.id, '203.0.113.10', junk)).statusCode).toBe(409);
  });
});
