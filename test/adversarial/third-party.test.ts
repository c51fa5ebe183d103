// A third party who holds a copy of someone's payment (the payer itself, a mempool reader who rebuilt the
// payload from a broadcast transaction, a seller passing it on) and sends it to our public facilitator while
// the merchant's own settle is unknown. One transfer must buy one thing: the intent, or the copy's success.
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCall } from '../../src/chain/rpc.js';
import { signPayment } from '../../src/x402/client.js';
import { requirementsFor, settle } from '../facilitator/support.js';
import { signAuthorization } from '../x402/support.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from '../intents/faults.js';
import { createIntent, createShop } from '../intents/fixtures.js';
import { buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, transfersTo } from '../intents/harness.js';
import { checkLedger, outbid, paymentsTo, reportTally } from './support.js';

const faults = new Faults();
let app: TestApp;

beforeAll(async () => {
  // A receipt wait short enough that a transaction held in the mempool makes the merchant's settle unknown.
  app = await buildPayApp({ ...faults.options(), env: { FACILITATOR_CONFIRMATION_TIMEOUT_MS: '300', INTENT_RECONCILE_INTERVAL_MS: '3600000' } });
});
afterAll(async () => {
  reportTally('third-party');
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  await app?.close();
});

/** An intent, a funded payer and its signed payment; the copy is what the third party sends the facilitator. */
async function intentWithPayment(cents: number) {
  const shop = await createShop(app);
  const payer = await fundedPayer(app, '20');
  const intent = (await createIntent(app, shop, { amountUsdCents: cents })).json();
  const { header } = await signPayment(payer, await challengeOf(app, intent.id));
  const copy = decodePaymentSignatureHeader(header) as PaymentPayload;
  return { shop, payer, intent, header, copy };
}

/** Services granted for the intent's transfer: the intent settled, plus every success a copy was answered. */
async function servicesFor(shop: { apiKey: string }, intentId: string, copySuccesses: number) {
  const intent = await getIntent(app, shop.apiKey, intentId);
  return (intent.status === 'settled' ? 1 : 0) + copySuccesses;
}

describe('a mempool reader', () => {
  it('races our broadcast with the same authorization at a higher fee: its transaction pays, once; one success', async () => {
    const payer = await fundedPayer(app, '1');
    const requirements = requirementsFor(app, '100');
    const purchase = await signAuthorization(payer, requirements);
    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    let ours, theirs;
    try {
      ours = await settle(app, purchase, requirements); // sent, then pending: the block waits
      theirs = await outbid(app, purchase);
      await rpcCall(rpc, 'evm_mine', []);
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    const answers = [await settle(app, purchase, requirements), await settle(app, purchase, requirements)];

    const successes = [ours, ...answers].filter((a) => a.body.success);
    const paid = await paymentsTo(app, requirements.payTo as `0x${string}`);
    checkLedger(successes.length, paid.length);
    expect(ours.body).toMatchObject({ success: false, errorReason: 'settlement_pending' });
    expect(paid).toEqual([{ transactionHash: theirs, value: 100n }]);
    expect(successes.map((a) => a.body.transaction)).toEqual([theirs]);
  });
});

describe('while the merchant settle is unknown', () => {
  it('a copy of the payment sent to the public facilitator is refused; the intent reconciles settled, once', async () => {
    const { shop, intent, header, copy } = await intentWithPayment(150);
    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    let answer;
    try {
      answer = await pay(app, intent.id, { 'payment-signature': header });
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    expect(answer.statusCode, answer.body).toBe(503);
    expect(answer.json()).toMatchObject({ code: 'settlement_result_unknown' });
    await rpcCall(rpc, 'evm_mine', []);

    const copied = await settle(app, copy, copy.accepted);
    const reconciled = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.status !== 'settling' ? body : null;
    });

    const transfers = await transfersTo(app, shop.payTo as Address);
    const services = await servicesFor(shop, intent.id, copied.body.success ? 1 : 0);
    checkLedger(services, transfers.length);
    expect(copied.body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used' });
    expect(reconciled).toMatchObject({ status: 'settled', transactionHash: copied.body.transaction });
    expect(transfers).toHaveLength(1);
    expect(services).toBe(1);
  });

  it('a copy settled before the merchant ever sent it takes the one success; the intent then fails, never settles too', async () => {
    const { shop, intent, header, copy } = await intentWithPayment(175);
    // The merchant's settle never reaches the facilitator, and its outcome is unknown (a lost request).
    faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost (injected)' }));
    expect((await pay(app, intent.id, { 'payment-signature': header })).statusCode).toBe(503);

    const copied = await settle(app, copy, copy.accepted);
    const reconciled = (await reconcile(app, shop.apiKey, intent.id)).json();

    const transfers = await transfersTo(app, shop.payTo as Address);
    const services = await servicesFor(shop, intent.id, copied.body.success ? 1 : 0);
    checkLedger(services, transfers.length);
    expect(copied.body).toMatchObject({ success: true });
    expect(reconciled).toMatchObject({ status: 'failed', failureCode: 'payment_already_used' });
    expect(transfers).toHaveLength(1);
    expect(services).toBe(1);
  });
});
