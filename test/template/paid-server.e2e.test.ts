import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../templates/paid-server/src/config.js';
import { probeFacilitator, startPaidServer, type RunningPaidServer } from '../../templates/paid-server/src/start.js';
import { payAndGet, testPayer } from '../../templates/paid-server/test/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { call, createWallet, freePort, settledPayment } from '../wallets/helpers.js';

// The seller template against the whole of Tollgate: its facilitator origin settling on the devchain.

const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
let app: TestApp;
let seller: RunningPaidServer;
const payTo = privateKeyToAccount(generatePrivateKey()).address;

const devchain = () => {
  const chain = app.ctx.chain.devchain;
  if (!chain) throw new Error('expected the embedded devchain');
  return chain;
};

beforeAll(async () => {
  const port = await freePort();
  // Pay-and-call refuses loopback unless the host is allow-listed.
  app = await buildTestApp({ env: { PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${port}` } });
  const config = loadConfig({
    X402_PAY_TO: payTo.toLowerCase(),
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    FACILITATOR_URL: app.urls.facilitator,
  });
  seller = await startPaidServer(config, { host: '127.0.0.1' });
});

afterAll(async () => {
  await seller?.close();
  await app?.close();
});

describe('paid-server template against Tollgate', () => {
  it('is accepted by Tollgate\'s facilitator and challenges unpaid calls', async () => {
    expect(await probeFacilitator(seller, loadConfig({ X402_PAY_TO: payTo, FACILITATOR_URL: app.urls.facilitator }))).toMatch(
      /settles exact on eip155:4663/,
    );
    const res = await fetch(`${seller.url}/weather`);
    expect(res.status).toBe(402);
    const required = decodePaymentRequiredHeader(res.headers.get('payment-required')!);
    expect(required.accepts).toEqual([
      expect.objectContaining({ network: 'eip155:4663', asset: USDG, amount: '100', payTo, maxTimeoutSeconds: 300 }),
    ]);
  });

  it('Tollgate pay-and-call pays /weather; payTo rises by exactly 100', async () => {
    const mgmt = await app.mgmtSecret();
    const { wallet, secret } = await createWallet(app, mgmt, 'weather-buyer');
    await devchain().fund(wallet.address, '1');
    const sellerBefore = await devchain().balanceOf(payTo);
    const buyerBefore = await devchain().balanceOf(wallet.address);

    const answer = await call(app, 'POST', '/v1/wallets/me/pay-and-call', secret, {
      url: `${seller.url}/weather?city=Lisbon`,
      maxPayment: { network: 'eip155:4663', asset: USDG, amount: '100' },
    });

    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { city: 'Lisbon', conditions: expect.any(String) } });
    // Answered on the seller's word (its transaction in the receipt), then settled by the chain.
    expect(answer.body.data.payment).toMatchObject({ status: 'pending', network: 'eip155:4663', amount: '100', payTo, transaction: null });
    const settled = await settledPayment(app, secret, answer.body.data.payment);
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await devchain().balanceOf(payTo)) - sellerBefore).toBe(100n);
    expect(buyerBefore - (await devchain().balanceOf(wallet.address))).toBe(100n);
  });

  it('an @x402 client with a devchain-funded key pays /weather directly', async () => {
    const payer = testPayer();
    await devchain().fund(payer.account.address, '1');
    const before = await devchain().balanceOf(payTo);

    const { paid } = await payAndGet(`${seller.url}/weather`, payer);

    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ city: 'San Francisco' });
    const settlement = decodePaymentResponseHeader(paid.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, network: 'eip155:4663', payer: payer.account.address });
    expect((await devchain().balanceOf(payTo)) - before).toBe(100n);
  });
});
