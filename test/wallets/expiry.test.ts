import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet } from './helpers.js';

const clock = new ManualClock();
let app: TestApp;

beforeAll(async () => {
  app = await buildWalletsApp({ clock });
});
afterAll(async () => {
  await app?.close();
});

describe('wallet credential expiry', () => {
  it('answers 401 once expiresAt has passed, and only for that credential', async () => {
    const mgmt = await app.mgmtSecret();
    const { wallet, secret: lasting } = await createWallet(app, mgmt, 'expiring');
    const expiresAt = new Date(clock.now().getTime() + 3_600_000).toISOString();
    const made = await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmt, { name: 'hour', expiresAt });
    expect(made.status).toBe(201);
    expect(made.body.data.expiresAt).toBe(expiresAt);
    expect((await call(app, 'GET', '/v1/wallets/me', made.body.data.secret)).status).toBe(200);

    clock.advance(3_600_000 - 1);
    expect((await call(app, 'GET', '/v1/wallets/me', made.body.data.secret)).status).toBe(200);
    clock.advance(1);
    const expired = await call(app, 'GET', '/v1/wallets/me', made.body.data.secret);
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe(1001);
    expect((await call(app, 'GET', '/v1/wallets/me', lasting)).status).toBe(200);

    // An expiry in the (service's) past is refused at creation.
    const past = await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmt, { name: 'late', expiresAt });
    expect(past.status).toBe(400);
  });
});
