// No payer can be blocked by others (issue 43, item 2): an intent's attempt budget
// (INTENT_PAY_LIMIT_PER_INTENT) is spent only by payments that verify against it; junk (malformed, forged,
// unfunded, signed for another charge) counts against its sender's address alone. On the devchain with the
// real facilitator and the default limits (30 per intent, 120 per client, per 60 s); what moved is read
// from the chain.
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import { paymentRailOf } from '../../src/modules/intents/gateway.js';
import type { PaymentRail } from '../../src/modules/intents/payments.js';
import { ManualClock } from '../../src/platform/clock.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, fundedPayer, getIntent, transfersTo } from './harness.js';

const clock = new ManualClock();
/** While set, every settle is refused before any transfer, as the facilitator does when the balance fell short. */
let refuseSettles = false;
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp({
    clock,
    rail: (ctx: AppContext): PaymentRail => {
      const real = paymentRailOf(ctx);
      return {
        ...real,
        settle: async (payload, requirements, record) => {
          if (!refuseSettles) return real.settle(payload, requirements, record);
          const reason = 'invalid_exact_evm_insufficient_balance';
          return { kind: 'failed', reason, message: "the payer's balance does not cover the amount", response: { success: false, errorReason: reason, transaction: '', network: requirements.network } };
        },
      };
    },
  });
}, 120_000);
afterAll(async () => app?.close());

const payFrom = (intentId: string, remoteAddress: string, headers: Record<string, string> = {}) =>
  app.origins.api!.inject({ method: 'POST', url: `/v1/payment-intents/${intentId}/pay`, remoteAddress, headers });

/** The payload with another payer named: its signature is no longer the payer's. */
const forged = (payload: PaymentPayload, from: string): PaymentPayload => {
  const inner = payload.payload as { authorization: Record<string, unknown> };
  return { ...payload, payload: { ...inner, authorization: { ...inner.authorization, from } } };
};

describe('junk does not spend the intent’s attempts', () => {
  it('30 junk attempts from third parties, then the payer’s signed payment: it settles, once', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 1234 })).json();
    const other = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const payer = await fundedPayer(app, '20');
    const payerBefore = await balanceOf(app, payer.address);
    const challenge = await challengeOf(app, intent.id);
    const unfunded = privateKeyToAccount(generatePrivateKey());
    const attacker = await fundedPayer(app, '20');

    // Each kind of junk a third party can send for free, ten times: a header that is no payment at all; the
    // payer's name on the attacker's signature; a real signature from an empty wallet; a funded payment that
    // answers another intent's charge.
    const junk: Array<() => Promise<string>> = [
      async () => Buffer.from(`junk-${Math.random()}`).toString('base64'),
      async () => encodePaymentSignatureHeader(forged((await signPayment(attacker, challenge)).payload, payer.address)),
      async () => (await signPayment(unfunded, challenge)).header,
      async () => (await signPayment(attacker, await challengeOf(app, other.id))).header,
    ];
    const refused: number[] = [];
    for (let i = 0; i < 30; i++) {
      const answer = await payFrom(intent.id, `203.0.113.${i % 3}`, { 'payment-signature': await junk[i % junk.length]!() });
      refused.push(answer.statusCode);
    }
    expect(refused.filter((status) => status === 429)).toEqual([]);
    expect(new Set(refused)).toEqual(new Set([402, 409]));
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending' });

    const paid = await payFrom(intent.id, '198.51.100.7', { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(paid.statusCode, paid.body).toBe(200);

    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers.map((t) => [t.args.from, t.args.value])).toEqual([[payer.address, 12_340_000n]]);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 12_340_000n);
    // Junk never wrote to the intent: no attempt of it is recorded.
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: transfers[0]!.transactionHash, lastPaymentError: null });
  }, 120_000);

  it('a flood of junk from one address reaches that address’s limit only; the payer still pays', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 250 })).json();
    const payer = await fundedPayer(app, '5');
    let answer;
    let sent = 0;
    do {
      answer = await payFrom(intent.id, '203.0.113.66', { 'payment-signature': Buffer.from(`junk-${sent}`).toString('base64') });
      sent += 1;
    } while (answer.statusCode === 409 && sent < 500);
    expect(answer.json()).toMatchObject({ code: 'rate_limited', details: { scope: 'client' } });
    expect(sent).toBe(app.ctx.config.intents.payLimits.perClient + 1);

    const paid = await payFrom(intent.id, '198.51.100.8', { 'payment-signature': (await signPayment(payer, await challengeOf(app, intent.id))).header });
    expect(paid.statusCode, paid.body).toBe(200);
    expect((await transfersTo(app, shop.payTo)).map((t) => t.args.value)).toEqual([2_500_000n]);
    clock.advance(60_000); // the next test starts in a fresh window
  }, 60_000);
});

describe('what still spends the intent’s attempts', () => {
  it('payments that verify but are refused at settle: the 31st in a window is 429 (scope intent); the next window pays', async () => {
    const shop = await createShop(app);
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const payer = await fundedPayer(app, '5');
    const challenge = await challengeOf(app, intent.id);
    const perIntent = app.ctx.config.intents.payLimits.perIntent;
    refuseSettles = true;
    try {
      // From many addresses, so only the intent's budget can run out.
      for (let i = 0; i < perIntent; i++) {
        const refused = await payFrom(intent.id, `192.0.2.${i}`, { 'payment-signature': (await signPayment(payer, challenge)).header });
        expect(refused.statusCode, refused.body).toBe(402);
      }
      const limited = await payFrom(intent.id, '192.0.2.200', { 'payment-signature': (await signPayment(payer, challenge)).header });
      expect(limited.statusCode).toBe(429);
      expect(limited.json()).toMatchObject({ code: 'rate_limited', details: { scope: 'intent' } });
    } finally {
      refuseSettles = false;
    }
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);

    clock.advance(60_000);
    const paid = await payFrom(intent.id, '192.0.2.201', { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(paid.statusCode, paid.body).toBe(200);
    expect((await transfersTo(app, shop.payTo)).map((t) => t.args.value)).toEqual([1_000_000n]);
  }, 120_000);
});
