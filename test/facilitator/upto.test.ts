// `upto` through our facilitator: the payer permits a maximum through Permit2, the seller settles the actual use.
// Paid by the official @x402/evm upto client, sold by the official @x402/express middleware (settlement override),
// settled once through x402UptoPermit2Proxy from the very relayer key the payer named, judged by the Transfer
// paired with the proxy's Settled event, with balances read from the chain.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { SettleResponse, VerifyResponse } from '@x402/core/types';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { UptoEvmScheme as UptoEvmServerScheme } from '@x402/evm/upto/server';
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPTO_PERMIT2_PROXY } from '../../src/chain/x402-contracts.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../x402/support.js';
import { post } from './support.js';
import { gasOf, NETWORK, officialPayment, permit2Payer, permit2Requirements, relayerState, signPermit, transfersTo } from './permit2-support.js';

let app: TestApp;
const usdg = () => app.ctx.chain.devchain!;
const settle = (payload: unknown, requirements: unknown) => post<SettleResponse>(app, 'settle', payload, requirements);
const verify = (payload: unknown, requirements: unknown) => post<VerifyResponse>(app, 'verify', payload, requirements);

beforeAll(async () => {
  // Two relayer keys: an upto permit names one of them, and only that one may send its settle.
  app = await buildTestApp({ env: { FACILITATOR_RELAYER_COUNT: '2' } });
});
afterAll(async () => app?.close());

describe('upto, paid by the official client', () => {
  it('settles the actual use, from the relayer the payer named: payer −used, payee +used, the rest stays', async () => {
    const named = app.ctx.chain.relayers[1]!.address;
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const max = permit2Requirements(app, 'upto', '50000', payTo, named);
    const payload = await officialPayment(payer, max);
    expect((await verify(payload, max)).body).toEqual({ isValid: true, payer: payer.address });

    const before = await usdg().balanceOf(payer.address);
    const { body } = await settle(payload, { ...max, amount: '12345' });
    expect(body).toMatchObject({ success: true, payer: payer.address, amount: '12345' });
    expect(before - (await usdg().balanceOf(payer.address))).toBe(12345n);
    expect(await usdg().balanceOf(payTo)).toBe(12345n);
    const gas = await gasOf(app, body.transaction as `0x${string}`);
    expect(gas).toMatchObject({ from: named, to: UPTO_PERMIT2_PROXY });
    expect(gas.limit).toBeLessThanOrEqual(160_000n);
    console.log(`upto: ${gas.used} gas used, limit ${gas.limit}`);
  });

  it('one success per permit: a second settle, of the same or another amount, is refused and sends nothing', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const max = permit2Requirements(app, 'upto', '50000', payTo);
    const payload = await officialPayment(payer, max);
    const first = await settle(payload, { ...max, amount: '1000' });
    expect(first.body).toMatchObject({ success: true, amount: '1000' });
    const sent = (await relayerState(app)).sent;
    expect((await settle(payload, { ...max, amount: '1000' })).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce', transaction: first.body.transaction });
    expect((await settle(payload, { ...max, amount: '40000' })).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce' });
    expect((await relayerState(app)).sent).toBe(sent);
    expect(await transfersTo(app, payer.address, payTo)).toHaveLength(1);
  });

  it('more than the permitted maximum is refused before anything is sent', async () => {
    const payer = await permit2Payer(app, '1');
    const max = permit2Requirements(app, 'upto', '5000', randomAddress());
    const payload = await officialPayment(payer, max);
    const sent = (await relayerState(app)).sent;
    expect((await settle(payload, { ...max, amount: '5001' })).body).toMatchObject({ success: false, errorReason: 'invalid_upto_evm_payload_settlement_exceeds_amount' });
    expect((await relayerState(app)).sent).toBe(sent);
  });

  it('no use: a settle of 0 succeeds with no transaction, once; the permit can never be charged after', async () => {
    const payer = await permit2Payer(app, '1');
    const payTo = randomAddress();
    const max = permit2Requirements(app, 'upto', '5000', payTo);
    const payload = await officialPayment(payer, max);
    const sent = (await relayerState(app)).sent;
    expect((await settle(payload, { ...max, amount: '0' })).body).toMatchObject({ success: true, transaction: '', amount: '0' });
    expect((await settle(payload, { ...max, amount: '5000' })).body).toMatchObject({ success: false, errorReason: 'permit2_invalid_nonce' });
    expect((await relayerState(app)).sent).toBe(sent);
    expect(await usdg().balanceOf(payTo)).toBe(0n);
  });

  it('a permit naming a facilitator that is not ours is refused (no key here could send it)', async () => {
    const payer = await permit2Payer(app, '1');
    const max = permit2Requirements(app, 'upto', '5000', randomAddress(), randomAddress());
    const payload = await signPermit(payer, max);
    expect((await verify(payload, max)).body).toMatchObject({ isValid: false, invalidReason: 'upto_facilitator_mismatch' });
    expect((await settle(payload, { ...max, amount: '100' })).body).toMatchObject({ success: false, errorReason: 'upto_facilitator_mismatch' });
  });

  it('a dust settle (under FACILITATOR_MIN_SETTLE_AMOUNT) is refused: it would cost more gas than it moves', async () => {
    const payer = await permit2Payer(app, '1');
    const max = permit2Requirements(app, 'upto', '5000', randomAddress());
    const payload = await officialPayment(payer, max);
    expect((await settle(payload, { ...max, amount: '99' })).body).toMatchObject({ success: false, errorReason: 'invalid_payment_requirements' });
  });
});

describe('the official @x402/express seller bills the actual use (setSettlementOverrides)', () => {
  let seller: { url: string; close(): Promise<void> };
  const payTo = randomAddress();
  beforeAll(async () => {
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: app.urls.facilitator })).register(NETWORK, new UptoEvmServerScheme());
    const price = { amount: '10000', asset: app.ctx.chain.asset.address, extra: { name: 'Global Dollar', version: '1' } };
    const server = express();
    server.use(paymentMiddleware({ 'GET /tokens': { accepts: { scheme: 'upto', network: NETWORK, payTo, price }, description: 'metered' } } as never, resourceServer));
    server.get('/tokens', (req, res) => {
      const used = String(req.query.used ?? '1000');
      setSettlementOverrides(res, { amount: used });
      res.json({ used });
    });
    const listener: Server = await new Promise((resolve) => {
      const s = server.listen(0, '127.0.0.1', () => resolve(s));
    });
    seller = { url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`, close: () => new Promise((r) => listener.close(() => r())) };
  });
  afterAll(async () => seller?.close());

  it('each call pays what it used, up to the maximum it permitted', async () => {
    const payer = await permit2Payer(app, '1');
    const client = x402Client.fromConfig({
      schemes: [{ network: NETWORK, client: new UptoEvmScheme(payer) }],
      spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: '10000' }] },
    });
    const pay = wrapFetchWithPayment(fetch, new x402HTTPClient(client));
    const before = await usdg().balanceOf(payer.address);
    const a = await pay(`${seller.url}/tokens?used=1234`);
    const b = await pay(`${seller.url}/tokens?used=8000`);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(decodePaymentResponseHeader(a.headers.get('payment-response')!)).toMatchObject({ success: true, amount: '1234' });
    expect(await usdg().balanceOf(payTo)).toBe(9234n);
    expect(before - (await usdg().balanceOf(payer.address))).toBe(9234n);
  });
});
