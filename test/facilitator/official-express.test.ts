// The official @x402/express middleware and @x402/fetch client against our facilitator: one payment
// sent many times at once must buy exactly one response, whoever the seller is. The middleware
// trusts `success: true` alone, so the facilitator may say it once per authorization, ever.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../templates/paid-server/src/config.js';
import { startPaidServer, type RunningPaidServer } from '../../templates/paid-server/src/start.js';
import { testPayer } from '../../templates/paid-server/test/helpers.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { freePort } from '../wallets/helpers.js';
import { nonceOf, transfersForNonce } from '../x402/support.js';

const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const NETWORK = 'eip155:4663';
const TRIALS = 20;
const COPIES = 8;

let app: TestApp;
let seller: { url: string; close(): Promise<void> };
let template: RunningPaidServer;
const payTo = privateKeyToAccount(generatePrivateKey()).address;
const templatePayTo = privateKeyToAccount(generatePrivateKey()).address;
// The middleware runs the handler before it settles and sends its body only after `success: true`.
let served = 0;

/** A seller as the x402 docs write one: the official middleware in front of one paid route. */
async function startOfficialSeller(facilitatorUrl: string) {
  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(NETWORK, new ExactEvmScheme());
  const routes = {
    'GET /report': {
      accepts: { scheme: 'exact', network: NETWORK, payTo, price: { amount: '100', asset: USDG, extra: { name: 'Global Dollar', version: '1' } } },
      description: 'one report',
    },
  } as const;
  const server = express();
  server.use(paymentMiddleware(routes as never, resourceServer));
  server.get('/report', (_req, res) => {
    served += 1;
    res.json({ report: served });
  });
  const listener: Server = await new Promise((resolve) => {
    const s = server.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}

const devchain = () => app.ctx.chain.devchain!;

beforeAll(async () => {
  app = await buildTestApp();
  seller = await startOfficialSeller(app.urls.facilitator);
  const port = await freePort();
  template = await startPaidServer(
    loadConfig({ X402_PAY_TO: templatePayTo.toLowerCase(), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, FACILITATOR_URL: app.urls.facilitator }),
    { host: '127.0.0.1' },
  );
});

afterAll(async () => {
  await template?.close();
  await seller?.close();
  await app?.close();
});

/** Signs one payment for `url` with the official client, then sends it COPIES times at once. */
async function replayConcurrently(url: string) {
  const payer = testPayer();
  await devchain().fund(payer.account.address, '1');
  const first = await fetch(url);
  expect(first.status).toBe(402);
  const required = payer.http.getPaymentRequiredResponse((name) => first.headers.get(name), await first.json());
  const payload = await payer.http.createPaymentPayload(required);
  const headers = payer.http.encodePaymentSignatureHeader(payload);
  const answers = await Promise.all(Array.from({ length: COPIES }, () => fetch(url, { headers })));
  await Promise.all(answers.map((a) => a.arrayBuffer()));
  return { payer, payload, answers };
}

describe('one payment buys one response through the official middleware', () => {
  it(`@x402/express: ${COPIES} concurrent copies of one payment, ${TRIALS} trials → exactly one 200 each`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const balanceBefore = await devchain().balanceOf(payTo);
      const { payer, payload, answers } = await replayConcurrently(`${seller.url}/report`);
      const ok = answers.filter((a) => a.status === 200);
      expect(ok, `trial ${trial}: ${answers.map((a) => a.status).join(',')}`).toHaveLength(1);
      expect(answers.filter((a) => a.status === 402)).toHaveLength(COPIES - 1);
      expect(decodePaymentResponseHeader(ok[0]!.headers.get('payment-response')!)).toMatchObject({ success: true, payer: payer.account.address });
      expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
      expect((await devchain().balanceOf(payTo)) - balanceBefore).toBe(100n);
    }
  });

  it(`templates/paid-server: ${COPIES} concurrent copies of one payment, ${TRIALS} trials → exactly one 200 each`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const { payer, payload, answers } = await replayConcurrently(`${template.url}/weather?city=Oslo`);
      expect(answers.filter((a) => a.status === 200), `trial ${trial}: ${answers.map((a) => a.status).join(',')}`).toHaveLength(1);
      expect(await transfersForNonce(app, payer.account.address, nonceOf(payload))).toBe(1);
    }
  });

  it('a copy sent after the first was served is refused, with the transaction named for diagnosis', async () => {
    const { payer, payload, answers } = await replayConcurrently(`${seller.url}/report`);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    const settlement = decodePaymentResponseHeader(answers.find((a) => a.status === 200)!.headers.get('payment-response')!);
    const late = await fetch(`${seller.url}/report`, { headers: payer.http.encodePaymentSignatureHeader(payload) });
    expect(late.status).toBe(402);
    const settleAgain = await fetch(`${app.urls.facilitator}/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted }),
    });
    expect(await settleAgain.json()).toMatchObject({
      success: false,
      errorReason: 'invalid_exact_evm_nonce_already_used',
      transaction: settlement.transaction,
    });
  });

  it('@x402/fetch pays the official seller once per call', async () => {
    const payer = testPayer();
    await devchain().fund(payer.account.address, '1');
    const pay = wrapFetchWithPayment(fetch, payer.http);
    const before = await devchain().balanceOf(payTo);
    const [a, b] = [await pay(`${seller.url}/report`), await pay(`${seller.url}/report`)];
    expect([a.status, b.status]).toEqual([200, 200]);
    expect((await devchain().balanceOf(payTo)) - before).toBe(200n);
  });
});
