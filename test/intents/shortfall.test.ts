// A settle that moved nothing leaves the intent payable (issue 43, item 3): a shortfall, an expired
// authorization, an authorization used elsewhere or a facilitator that sent nothing records the attempt as
// the intent's lastPaymentError and the intent stays `pending`; the next payment pays it. On the devchain
// with the real facilitator; what moved is read from the chain.
import { decodePaymentResponseHeader } from '@x402/core/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import type { PaymentRail } from '../../src/modules/intents/payments.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from './faults.js';
import { createIntent, createShop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, signedHeader, transfersTo } from './harness.js';

const faults = new Faults();
/** Settles held until this many have arrived, then let go together (both payments verified before either settles). */
let gate: { waiting: number; size: number; open: () => void; opened: Promise<void> } | null = null;
let app: TestApp;

function holdSettles(size: number): void {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { waiting: 0, size, open, opened };
}

const SETTLES_PER_PAYER = 3;

beforeAll(async () => {
  const options = faults.options();
  app = await buildPayApp({
    ...options,
    rail: (ctx: AppContext): PaymentRail => {
      const rail = options.rail!(ctx);
      return {
        ...rail,
        settle: async (payload, requirements, record) => {
          const held = gate;
          if (held) {
            held.waiting += 1;
            if (held.waiting >= held.size) {
              gate = null;
              held.open();
            }
            await held.opened;
          }
          return rail.settle(payload, requirements, record);
        },
      };
    },
    // The facilitator's settle budget per payer, small enough for one test to spend it, in a window of a year: the
    // windows are fixed (the database's clock), and a test that spends a 60 s budget across a minute's end found
    // it refilled (a CI run settled its fourth payment at 19:10:00.488).
    env: { FACILITATOR_SETTLE_LIMIT_PER_PAYER: String(SETTLES_PER_PAYER), FACILITATOR_LIMIT_WINDOW_SECONDS: String(365 * 24 * 3600) },
  });
}, 120_000);
afterAll(async () => app?.close());

const checkout = async (intentId: string) => (await app.origins.api!.inject({ method: 'GET', url: `/v1/payment-intents/${intentId}/checkout` })).json();

describe('two tabs, one balance', () => {
  it('a payer holding 15 USDG pays two $12.34 intents at once: one settles, the other stays payable and settles once topped up', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '15');
    const first = (await createIntent(app, shop, { amountUsdCents: 1234 })).json();
    const second = (await createIntent(app, shop, { amountUsdCents: 1234 })).json();
    const headers = [await signedHeader(app, first.id, payer), await signedHeader(app, second.id, payer)];

    // Both verify against 15 USDG; only then do both settle.
    holdSettles(2);
    const answers = await Promise.all([first, second].map((intent, i) => pay(app, intent.id, { 'payment-signature': headers[i]! })));

    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 402]);
    const won = answers[0]!.statusCode === 200 ? 0 : 1;
    const [winner, loser] = won === 0 ? [first, second] : [second, first];
    const refused = answers[1 - won]!;
    // A fresh challenge saying why, and the refused settle's PAYMENT-RESPONSE (x402: present on failure too).
    expect(refused.json()).toMatchObject({ x402Version: 2, error: expect.stringMatching(/^invalid_exact_evm_/), accepts: [{ amount: '12340000' }] });
    expect(decodePaymentResponseHeader(refused.headers['payment-response'] as string)).toMatchObject({ success: false });

    let transfers = await transfersTo(app, shop.payTo);
    expect(transfers.map((t) => [t.args.from, t.args.value])).toEqual([[payer.address, 12_340_000n]]);
    expect(await balanceOf(app, payer.address)).toBe(15_000_000n - 12_340_000n);
    expect(await getIntent(app, shop.apiKey, winner.id)).toMatchObject({ status: 'settled', transactionHash: transfers[0]!.transactionHash, lastPaymentError: null });
    const stored = await getIntent(app, shop.apiKey, loser.id);
    expect(stored).toMatchObject({
      status: 'pending',
      transactionHash: null,
      failureCode: null,
      lastPaymentError: { code: refused.json().error, message: expect.any(String), at: expect.any(String) },
    });
    expect(await checkout(loser.id)).toMatchObject({ status: 'pending', failureMoneyMoved: null, lastPaymentError: { code: refused.json().error, at: stored.lastPaymentError.at } });
    // The owner's dashboard reads the same.
    const listed = await app.origins.api!.inject({ method: 'GET', url: `/v1/projects/${shop.projectId}/payment-intents`, headers: { authorization: `Bearer ${shop.identity}` } });
    expect(listed.json().data.find((i: { id: string }) => i.id === loser.id)).toMatchObject({ status: 'pending', lastPaymentError: stored.lastPaymentError });

    // The refused authorization stays spent for this intent: a new signature pays it, once the payer has the money.
    expect((await pay(app, loser.id, { 'payment-signature': headers[1 - won]! })).json()).toMatchObject({ code: 'payment_authorization_already_used' });
    await app.ctx.chain.devchain!.fund(payer.address, '10');
    const paid = await pay(app, loser.id, { 'payment-signature': await signedHeader(app, loser.id, payer) });
    expect(paid.statusCode, paid.body).toBe(200);

    transfers = await transfersTo(app, shop.payTo);
    expect(transfers.map((t) => [t.args.from, t.args.value])).toEqual([
      [payer.address, 12_340_000n],
      [payer.address, 12_340_000n],
    ]);
    expect(new Set(transfers.map((t) => t.transactionHash)).size).toBe(2);
    expect(await balanceOf(app, payer.address)).toBe(25_000_000n - 2n * 12_340_000n);
    expect(await getIntent(app, shop.apiKey, loser.id)).toMatchObject({ status: 'settled', transactionHash: transfers[1]!.transactionHash });
    expect(paid.json()).toMatchObject({ status: 'settled', settlement: { transaction: transfers[1]!.transactionHash, payer: payer.address } });
  }, 120_000);
});

describe('each settle that moved nothing', () => {
  const refusal = (reason: string) => async () =>
    ({ kind: 'failed', reason, message: `${reason} (injected)`, response: { success: false, errorReason: reason, transaction: '', network: 'eip155:4663' } }) as const;

  it.each([
    ['the balance fell short', 'invalid_exact_evm_insufficient_balance'],
    ['the authorization expired', 'invalid_exact_evm_payload_authorization_valid_before'],
    ['the transfer reverted', 'invalid_exact_evm_transaction_failed'],
  ])('%s: the intent stays payable with the refusal recorded, and a new payment pays it', async (_what, reason) => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 200 })).json();
    faults.onNextSettle(refusal(reason));
    const refused = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) });
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ error: reason });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', lastPaymentError: { code: reason, message: `${reason} (injected)` } });

    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
    expect((await transfersTo(app, shop.payTo)).map((t) => t.args.value)).toEqual([2_000_000n]);
  }, 60_000);

  it('the payer’s authorization was settled elsewhere first: 409, and the intent records it and stays payable', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const challenge = await challengeOf(app, intent.id);
    const { header, payload } = await signPayment(payer, challenge);
    faults.onNextSettle(async (real) => {
      await app.ctx.facilitator!.settle(payload, challenge.accepts[0]!);
      return real();
    });
    expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ code: 'payment_authorization_already_used' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({
      status: 'pending',
      failureCode: null,
      lastPaymentError: { code: 'invalid_exact_evm_nonce_already_used', message: expect.stringContaining('nothing was charged for this intent') },
    });
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
  }, 60_000);

  it('the facilitator sent nothing (the payer’s settle budget is spent): 503, the intent stays payable and says so', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '10');
    for (let i = 0; i < SETTLES_PER_PAYER; i++) {
      const spent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
      expect((await pay(app, spent.id, { 'payment-signature': await signedHeader(app, spent.id, payer) })).statusCode).toBe(200);
    }
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const header = await signedHeader(app, intent.id, payer);
    const refused = await pay(app, intent.id, { 'payment-signature': header });
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'facilitator_unavailable' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({
      status: 'pending',
      failureCode: null,
      lastPaymentError: { code: 'facilitator_unavailable', message: expect.stringContaining('nothing was sent') },
    });
    expect(await checkout(intent.id)).toMatchObject({ status: 'pending', lastPaymentError: { code: 'facilitator_unavailable' } });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(SETTLES_PER_PAYER);

    // Another payer (whose budget is whole) pays it.
    const other = await fundedPayer(app, '10');
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, other) })).statusCode).toBe(200);
    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers.at(-1)!.args).toMatchObject({ from: other.address, value: 1_000_000n });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: transfers.at(-1)!.transactionHash });
  }, 90_000);
});

describe('a refusal that cannot rule a transfer out', () => {
  it('is not a failure: the intent stays settling and reconciliation decides it from the chain', async () => {
    const shop = await createShop(app);
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
    // The real settle pays, but its answer says the transfer could not be matched to the payment.
    const reason = 'invalid_exact_evm_transfer_event_mismatch';
    faults.onNextSettle(async (real) => {
      await real();
      return { kind: 'failed', reason, message: 'no receipt to judge the settlement by (injected)', response: { success: false, errorReason: reason, transaction: '', network: 'eip155:4663' } };
    });
    const answer = await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ code: 'settlement_result_unknown' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settling', failureCode: 'settlement_result_unknown' });

    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers.map((t) => t.args.value)).toEqual([3_000_000n]);
    const reconciled = await eventually(async () => {
      const body = (await reconcile(app, shop.apiKey, intent.id)).json();
      return body.status === 'settled' ? body : null;
    });
    expect(reconciled).toMatchObject({ status: 'settled', transactionHash: transfers[0]!.transactionHash });
  }, 60_000);
});
