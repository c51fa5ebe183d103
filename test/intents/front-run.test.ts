import { afterAll, beforeAll, expect, it } from 'vitest';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { executeElsewhere } from '../x402/support.js';
import { Faults } from './faults.js';
import { createIntent, createShop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, fundedPayer, getIntent, pay, transfersTo } from './harness.js';

// A front-run: after our verify and before our settle, another account sends the payer's signed
// authorization to the token itself. The money moved to the merchant, once: the intent is paid.

const faults = new Faults();
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp(faults.options());
});
afterAll(async () => app?.close());

it('an authorization executed by someone else between verify and settle settles the intent with that transaction', async () => {
  const shop = await createShop(app);
  const payer = await fundedPayer(app, '20');
  const intent = (await createIntent(app, shop, { amountUsdCents: 250 })).json();
  const { header } = await signPayment(payer, await challengeOf(app, intent.id));
  const payerBefore = await balanceOf(app, payer.address);
  let frontRun = '';
  faults.onNextSettle(async (real, paid) => {
    frontRun = (await executeElsewhere(app, paid)).transactionHash;
    return real();
  });

  const answer = await pay(app, intent.id, { 'payment-signature': header });

  expect(answer.statusCode, answer.body).toBe(200);
  expect(answer.json()).toMatchObject({ status: 'settled', settlement: { transaction: frontRun } });
  expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: frontRun });
  const transfers = await transfersTo(app, shop.payTo);
  expect(transfers.map((t) => [t.transactionHash, t.args.value])).toEqual([[frontRun, 2_500_000n]]);
  expect(await balanceOf(app, payer.address)).toBe(payerBefore - 2_500_000n);
  // Paying again with the same signature is not a second payment.
  expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ status: 'settled', settlement: { transaction: frontRun } });
});
