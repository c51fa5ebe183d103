// Wallet keys held in AWS KMS (WALLET_KEY_PROVIDER=aws-kms), against a stand-in of the KMS JSON API that
// checks every request's Signature Version 4: a wallet's key is created in KMS and its address derived from
// the public key; pay-and-call of /x402-test/ping is signed by KMS (EIP-712 digest, high s made low, recovery
// id found) and settles on the devchain; wrong credentials provision nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/settings.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, settledPayment, waitFor } from './helpers.js';
import { startKmsStandIn } from './kms-stand-in.js';

const REGION = 'eu-west-1';
let kms: Awaited<ReturnType<typeof startKmsStandIn>>;
let app: TestApp;
const envFor = (secret: string) => ({ WALLET_KEY_PROVIDER: 'aws-kms', AWS_REGION: REGION, AWS_KMS_ENDPOINT: kms.url, AWS_ACCESS_KEY_ID: 'AKIATESTKEY', AWS_SECRET_ACCESS_KEY: secret });

beforeAll(async () => {
  kms = await startKmsStandIn('AKIATESTKEY', 'test-secret-key', REGION);
  app = await buildWalletsApp({ env: envFor('test-secret-key') });
});
afterAll(async () => {
  await app?.close();
  await kms?.close();
});

describe('wallet keys in AWS KMS', () => {
  it('needs its settings', () => {
    for (const name of ['AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']) expect(() => loadConfig({ WALLET_KEY_PROVIDER: 'aws-kms' })).toThrow(name);
    expect(() => loadConfig({ WALLET_KEY_PROVIDER: 'aws-kms' })).toThrow(ConfigError);
  });

  it('creates the key in KMS and pays /x402-test/ping with KMS signatures', async () => {
    const mgmt = await app.mgmtSecret('kms');
    const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'kms-agent', name: 'kms agent' });
    expect(created.status).toBe(201);
    const { wallet, credential } = created.body.data;
    const active = await waitFor(async () => {
      const current = (await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmt)).body.data;
      return current.status === 'active' ? current : null;
    });
    const [keyId, privateKey] = [...kms.keys.entries()][0]!;
    const { privateKeyToAccount } = await import('viem/accounts');
    expect(active.address).toBe(privateKeyToAccount(privateKey).address);
    expect(kms.calls.map((c) => c.target)).toEqual(['TrentService.CreateKey', 'TrentService.GetPublicKey']);
    expect(kms.calls[0]!.body).toMatchObject({ KeySpec: 'ECC_SECG_P256K1', KeyUsage: 'SIGN_VERIFY' });

    await app.ctx.chain.devchain!.fund(active.address, '1');
    const paid = await call(app, 'POST', '/v1/wallets/me/pay-and-call', credential.secret, {
      url: `${app.urls.api}/x402-test/ping`,
      maxPayment: { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' },
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.data.upstream.body).toEqual({ message: 'paid pong' });
    expect(paid.body.data.payment).toMatchObject({ status: 'pending', amount: '100' });
    await settledPayment(app, credential.secret, paid.body.data.payment);
    expect(await app.ctx.chain.devchain!.balanceOf(active.address)).toBe(1_000_000n - 100n);
    expect(kms.calls.filter((c) => c.target === 'TrentService.Sign').map((c) => c.body)).toEqual([
      expect.objectContaining({ KeyId: keyId, MessageType: 'DIGEST', SigningAlgorithm: 'ECDSA_SHA_256' }),
    ]);
  });

  it('provisions nothing when KMS refuses the request signature', async () => {
    const wrong = await buildWalletsApp({ env: envFor('not-the-secret') });
    try {
      const mgmt = await wrong.mgmtSecret('kms-wrong');
      const before = kms.keys.size;
      const created = await call(wrong, 'POST', '/v1/wallets', mgmt, { externalId: 'kms-refused', name: 'refused' });
      const wallet = (await call(wrong, 'GET', `/v1/wallets/${created.body.data.wallet.id}`, mgmt)).body.data;
      expect(wallet.status).not.toBe('active');
      expect(wallet.address).toBeNull();
      expect(kms.keys.size).toBe(before);
    } finally {
      await wrong.close();
    }
  });
});
