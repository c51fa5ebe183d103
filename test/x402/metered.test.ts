// GET /x402-test/metered: an `upto` challenge answered by the official @x402/evm upto client, settled through our
// own facilitator for a random share of the maximum; balances read from the chain.
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meteredUse } from '../../src/modules/x402-test/routes.js';
import { NETWORK, permit2Payer, transfersTo } from '../facilitator/permit2-support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
let url: string;
const usdg = () => app.ctx.chain.devchain!;
const clientOf = (payer: Awaited<ReturnType<typeof permit2Payer>>) =>
  x402Client.fromConfig({
    schemes: [{ network: NETWORK, client: new UptoEvmScheme(payer) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: '10000' }] },
  });

beforeAll(async () => {
  app = await buildTestApp();
  url = `${app.urls.api}/x402-test/metered`;
});
afterAll(async () => app?.close());

describe('GET /x402-test/metered', () => {
  it('answers an upto challenge: Permit2, at most 10000, naming our facilitator signer', async () => {
    const res = await fetch(url);
    expect(res.status).toBe(402);
    const challenge = decodePaymentRequiredHeader(res.headers.get('payment-required')!) as PaymentRequired;
    const supported = await app.ctx.x402.facilitator().getSupported();
    expect(challenge.accepts).toEqual([
      expect.objectContaining({ scheme: 'upto', network: NETWORK, amount: '10000', asset: app.ctx.chain.asset.address, extra: expect.objectContaining({ assetTransferMethod: 'permit2', facilitatorAddress: supported.signers['eip155:*']![0] }) }),
    ]);
  });

  it('the official client pays; the payer loses exactly the use, the payee gains it, the answer names it', async () => {
    const payer = await permit2Payer(app, '1');
    const pay = wrapFetchWithPayment(fetch, new x402HTTPClient(clientOf(payer)));
    const payTo = (await challengeOf()).accepts[0]!.payTo as Address;
    const [before, payeeBefore] = [await usdg().balanceOf(payer.address), await usdg().balanceOf(payTo)];
    const res = await pay(url);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { used: string; maximum: string; settlement: { amount: string; transaction: string }; payer: string };
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, amount: body.used, transaction: body.settlement.transaction });
    expect(BigInt(body.used)).toBeGreaterThanOrEqual(100n);
    expect(BigInt(body.used)).toBeLessThanOrEqual(10000n);
    expect(body).toMatchObject({ maximum: '10000', payer: payer.address });
    expect(before - (await usdg().balanceOf(payer.address))).toBe(BigInt(body.used));
    expect((await usdg().balanceOf(payTo)) - payeeBefore).toBe(BigInt(body.used));
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([BigInt(body.used)]);
  });

  it('a permit buys one answer: sent again it gets the same answer, and nothing more moves', async () => {
    const payer = await permit2Payer(app, '1');
    const payload = await clientOf(payer).createPaymentPayload(await challengeOf());
    const header = encodePaymentSignatureHeader(payload);
    const first = await fetch(url, { headers: { 'payment-signature': header } });
    expect(first.status).toBe(200);
    const firstBody = (await first.json()) as { used: string };
    const after = await usdg().balanceOf(payer.address);
    const again = await fetch(url, { headers: { 'payment-signature': header } });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { used: string }).used).toBe(firstBody.used);
    expect(await usdg().balanceOf(payer.address)).toBe(after);
  });

  it('the use is a share of the maximum from 1% to 100%, fixed per payment record', () => {
    const shares = Array.from({ length: 500 }, (_, i) => meteredUse(10000n, `record-${i}`));
    expect(Math.min(...shares.map(Number))).toBe(100);
    expect(Math.max(...shares.map(Number))).toBe(10000);
    expect(shares.every((s) => s % 100n === 0n)).toBe(true);
    expect(meteredUse(10000n, 'record-7')).toBe(shares[7]);
  });
});

async function challengeOf(): Promise<PaymentRequired> {
  return decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required')!) as PaymentRequired;
}
