import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { WalletProvider } from '../../src/modules/wallets/provider.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, waitFor } from './helpers.js';

/** A provider that fails while `failuresLeft` > 0 (per wallet), then works. */
class FlakyProvider implements WalletProvider {
  readonly name = 'flaky';
  failuresLeft = new Map<string, number>();
  attempts = new Map<string, number>();
  defaultFailures = 0;

  async provision(walletId: string) {
    this.attempts.set(walletId, (this.attempts.get(walletId) ?? 0) + 1);
    const left = this.failuresLeft.get(walletId) ?? this.defaultFailures;
    if (left > 0) {
      this.failuresLeft.set(walletId, left - 1);
      throw new Error(`KMS unavailable (${left} more)`);
    }
    const key = generatePrivateKey();
    return { address: privateKeyToAccount(key).address, keyRef: `plain:${key}` };
  }

  async signer(_walletId: string, keyRef: string) {
    return privateKeyToAccount(keyRef.slice('plain:'.length) as `0x${string}`);
  }
}

let app: TestApp;
let mgmt: string;
const provider = new FlakyProvider();

beforeAll(async () => {
  app = await buildWalletsApp({ wallets: { provider } });
  mgmt = await app.mgmtSecret();
});
afterAll(async () => {
  await app?.close();
});

describe('provisioning', () => {
  it('reports a failed attempt (status failed, lastError) and the worker retries it to active with backoff', async () => {
    provider.defaultFailures = 2;
    const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'flaky-1', name: 'Flaky' });
    provider.defaultFailures = 0;
    expect(created.status).toBe(201);
    const { wallet, credential } = created.body.data;
    expect(wallet).toMatchObject({ status: 'failed', address: null, provider: 'flaky' });
    expect(wallet.lastError).toContain('KMS unavailable');
    expect(credential.secret).toMatch(/^svc_wallet_/);

    // The first credential exists, but a failed wallet cannot get another one or pay.
    const more = await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmt, { name: 'more' });
    expect(more.status).toBe(409);
    expect(more.body).toMatchObject({ code: 1005, data: { status: 'failed' } });
    const pay = await call(app, 'POST', '/v1/wallets/me/pay-and-call', credential.secret, { url: 'https://example.com/x', maxPayment: { network: 'eip155:4663', asset: `0x${'1'.repeat(40)}`, amount: '1' } });
    expect(pay.status).toBe(409);

    const started = Date.now();
    const active = await waitFor(async () => {
      const got = await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmt);
      return got.body.data.status === 'active' ? got.body.data : null;
    }, 15_000);
    // Retries at +1 s and +2 s: the second success cannot come before ~3 s.
    expect(Date.now() - started).toBeGreaterThan(2_000);
    expect(provider.attempts.get(wallet.id)).toBe(3);
    expect(active.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(active.lastError).toBeNull();
    expect((await call(app, 'GET', '/v1/wallets/me', credential.secret)).body.data.status).toBe('active');
    expect((await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmt, { name: 'more' })).status).toBe(201);
  });

  it('a repeated create of a failed wallet is idempotent too', async () => {
    provider.defaultFailures = 100;
    const first = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'flaky-2', name: 'Flaky' });
    const again = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'flaky-2', name: 'Flaky' });
    provider.defaultFailures = 0;
    expect(first.body.data.wallet.status).toBe('failed');
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ created: false, credential: null, wallet: { id: first.body.data.wallet.id } });
  });

  it('an active wallet is never provisioned again', async () => {
    const { wallet } = await createWallet(app, mgmt, 'steady');
    expect(wallet.status).toBe('active');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(provider.attempts.get(wallet.id)).toBe(1);
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmt)).body.data.address).toBe(wallet.address);
  });
});
