// The payer as attacker: it controls its own key, signs what it likes and sends its own transactions.
// Each attack ends with the ledger: the responses served never outnumber the transfers that paid for them.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { encodePaymentSignatureHeader, decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import express from 'express';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { requirementsFor, settle, verify } from '../facilitator/support.js';
import { fundedPayer, nonceOf, randomAddress, signAuthorization } from '../x402/support.js';
import { executeTogether, paymentsTo, checkLedger, reportTally } from './support.js';

const USDG = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';
const NETWORK = 'eip155:4663';
const PRICE = '100';

let app: TestApp;

beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  reportTally('payer');
  await app?.close();
});

/** K purchases to `requirements.payTo`, and for all but the last a burn: the same nonce, 1 unit back to the payer. */
async function purchasesWithBurns(payer: PrivateKeyAccount, requirements: PaymentRequirements, k: number) {
  const purchases: PaymentPayload[] = [];
  for (let i = 0; i < k; i++) purchases.push(await signAuthorization(payer, requirements));
  const burns = await Promise.all(purchases.slice(0, -1).map((p) => signAuthorization(payer, requirements, { nonce: nonceOf(p), to: payer.address, value: '1' })));
  return { purchases, burns, batch: [...burns, purchases.at(-1)!] };
}

describe('a payer who spends its own nonces elsewhere', () => {
  it('burns K-1 purchases on 1-unit transfers to itself and executes the K-th in one Multicall3 transaction: one success', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, PRICE);
    const { purchases, batch } = await purchasesWithBurns(payer, requirements, 4);
    const receipt = await executeTogether(app, payer, batch);

    const answers = await Promise.all(purchases.map((p) => settle(app, p, requirements)));

    const successes = answers.filter((a) => a.body.success);
    const paid = await paymentsTo(app, requirements.payTo as `0x${string}`);
    checkLedger(successes.length, paid.length);
    expect(successes.map((a) => a.body.transaction)).toEqual([receipt.transactionHash]);
    expect(answers.at(-1)!.body).toMatchObject({ success: true, transaction: receipt.transactionHash });
    for (const a of answers.slice(0, -1)) expect(a.body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' });
    expect(paid).toEqual([{ transactionHash: receipt.transactionHash, value: 100n }]);
  });

  it('signs the same nonce to another payee at the same price and executes that one: the purchase is not paid', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, PRICE);
    const purchase = await signAuthorization(payer, requirements);
    const decoy = await signAuthorization(payer, requirements, { nonce: nonceOf(purchase), to: randomAddress() });
    await executeTogether(app, payer, [decoy]);

    const answer = await settle(app, purchase, requirements);

    const paid = await paymentsTo(app, requirements.payTo as `0x${string}`);
    checkLedger(answer.body.success ? 1 : 0, paid.length);
    expect(answer.body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' });
    expect(paid).toEqual([]);
  });

  it('executes two purchases to one payee in one transaction: each settles once, to its own transfer', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, PRICE);
    const purchases = [await signAuthorization(payer, requirements), await signAuthorization(payer, requirements)];
    const receipt = await executeTogether(app, payer, purchases);

    const first = await Promise.all(purchases.map((p) => settle(app, p, requirements)));
    const again = await Promise.all(purchases.map((p) => settle(app, p, requirements)));

    const paid = await paymentsTo(app, requirements.payTo as `0x${string}`);
    checkLedger([...first, ...again].filter((a) => a.body.success).length, paid.length);
    expect(first.map((a) => a.body.success)).toEqual([true, true]);
    expect(first.map((a) => a.body.transaction)).toEqual([receipt.transactionHash, receipt.transactionHash]);
    expect(again.map((a) => a.body.success)).toEqual([false, false]);
    expect(paid).toHaveLength(2);
  });
});

describe('a payer reading our refusals', () => {
  it('an unfunded payment is refused in our words: no RPC URL, request body, calldata or signature', async () => {
    const payer = await fundedPayer(app, '0');
    const requirements = requirementsFor(app, PRICE);
    const purchase = await signAuthorization(payer, requirements);

    const answers = [await verify(app, purchase, requirements), await settle(app, purchase, requirements)];

    for (const { body } of answers) {
      const message = (body as { invalidMessage?: string; errorMessage?: string }).invalidMessage ?? (body as { errorMessage?: string }).errorMessage ?? '';
      expect(message).toBe("the payer's balance does not cover the amount");
      expect(JSON.stringify(body)).not.toMatch(/https?:\/\/|Request body|Raw Call|0x[0-9a-f]{128}/i);
    }
  });
});

describe('the official @x402/express middleware with a slow handler', () => {
  const payTo = randomAddress();
  let served = 0;
  let openGate: () => void = () => undefined;
  let gate = Promise.resolve();
  let handlersWaiting = 0;
  let seller: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: app.urls.facilitator })).register(NETWORK, new ExactEvmScheme());
    const routes = {
      'GET /report': {
        accepts: { scheme: 'exact', network: NETWORK, payTo, price: { amount: PRICE, asset: USDG, extra: { name: 'Global Dollar', version: '1' } } },
        description: 'one report',
      },
    } as const;
    const server = express();
    server.use(paymentMiddleware(routes as never, resourceServer));
    server.get('/report', async (_req, res) => {
      handlersWaiting += 1;
      await gate;
      served += 1;
      res.json({ report: served });
    });
    const listener: Server = await new Promise((resolve) => {
      const s = server.listen(0, '127.0.0.1', () => resolve(s));
    });
    seller = {
      url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}`,
      close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
    };
  });
  afterAll(async () => seller?.close());

  it('K purchases verified, their nonces burned in one Multicall3 transaction while the handlers run: one report served', async () => {
    const k = 5;
    const payer = await fundedPayer(app, '1');
    const challenge = await fetch(`${seller.url}/report`);
    expect(challenge.status).toBe(402);
    const requirements = decodePaymentRequiredHeader(challenge.headers.get('payment-required')!).accepts[0]!;
    const { purchases, batch } = await purchasesWithBurns(payer, requirements, k);
    gate = new Promise((resolve) => (openGate = resolve));
    served = 0;
    handlersWaiting = 0;

    const responses = Promise.all(purchases.map((p) => fetch(`${seller.url}/report`, { headers: { 'payment-signature': encodePaymentSignatureHeader(p) } })));
    await until(() => handlersWaiting === k);
    const receipt = await executeTogether(app, payer, batch);
    openGate();
    const answers = await responses;
    await Promise.all(answers.map((a) => a.arrayBuffer()));

    const delivered = answers.filter((a) => a.status === 200).length;
    const paid = await paymentsTo(app, payTo);
    checkLedger(delivered, paid.length);
    expect(paid).toEqual([{ transactionHash: receipt.transactionHash, value: 100n }]);
    expect(delivered, answers.map((a) => a.status).join(',')).toBe(1);
  });
});

async function until(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
