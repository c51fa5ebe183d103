import { createWalletClient, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import { signPayment } from '../../src/x402/client.js';
import type { TestApp } from '../helpers/test-app.js';
import { Faults } from './faults.js';
import { createIntent, createShop } from './fixtures.js';
import { balanceOf, buildPayApp, challengeOf, eventually, fundedPayer, getIntent, pay, reconcile, signedHeader, transfersTo } from './harness.js';

// The state machine under concurrency and faults, on the devchain with the real facilitator.

const faults = new Faults();
let app: TestApp;

beforeAll(async () => {
  app = await buildPayApp(faults.options());
});
afterAll(async () => {
  await app?.close();
});

const freshShop = () => createShop(app);

describe('one settlement per intent', () => {
  it('lets exactly one of 20 concurrent pays with distinct authorizations settle; the payer is charged once', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '200');
    const intent = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const challenge = await challengeOf(app, intent.id);
    const signed = await Promise.all(Array.from({ length: 20 }, () => signPayment(payer, challenge)));
    expect(new Set(signed.map((s) => (s.payload.payload as { authorization: { nonce: string } }).authorization.nonce)).size).toBe(20);
    const payerBefore = await balanceOf(app, payer.address);

    const answers = await Promise.all(
      signed.map(async ({ header }) => {
        const response = await fetch(`${app.urls.api}/v1/payment-intents/${intent.id}/pay`, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      }),
    );

    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(1);
    expect(transfers[0].args.value).toBe(5_000_000n);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 5_000_000n);
    const settled = await getIntent(app, shop.apiKey, intent.id);
    expect(settled).toMatchObject({ status: 'settled', transactionHash: transfers[0].transactionHash });

    const ok = answers.filter((a) => a.status === 200);
    const busy = answers.filter((a) => a.status === 409);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(ok.length + busy.length).toBe(20);
    for (const answer of ok) expect(answer.body).toMatchObject({ status: 'settled', settlement: { transaction: transfers[0].transactionHash } });
    for (const answer of busy) expect(answer.body).toMatchObject({ code: 'settlement_in_progress' });
  });

  it('one authorization sent 10 times at once: each answer is the settlement or 409, never 402; paid once', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const { header } = await signPayment(payer, await challengeOf(app, intent.id));

    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const response = await fetch(`${app.urls.api}/v1/payment-intents/${intent.id}/pay`, { method: 'POST', headers: { 'PAYMENT-SIGNATURE': header } });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      }),
    );

    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(1);
    expect(answers.map((a) => a.status).filter((s) => s !== 200 && s !== 409)).toEqual([]);
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(1);
    for (const answer of answers) {
      if (answer.status === 200) expect(answer.body).toMatchObject({ status: 'settled', settlement: { transaction: transfers[0].transactionHash } });
      else expect(answer.body).toMatchObject({ code: 'settlement_in_progress' });
    }
    // Once settled, the same header keeps answering the settlement.
    const again = await pay(app, intent.id, { 'payment-signature': header });
    expect(again.statusCode).toBe(200);
  });

  it('answers 409 settlement_in_progress while an intent is settling', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const challenge = await challengeOf(app, intent.id);
    faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost answer (injected)' }));
    expect((await pay(app, intent.id, { 'payment-signature': (await signPayment(payer, challenge)).header })).json().code).toBe('settlement_result_unknown');
    for (const headers of [{}, { 'payment-signature': (await signPayment(payer, challenge)).header }] as Record<string, string>[]) {
      const response = await pay(app, intent.id, headers);
      expect(response.statusCode).toBe(409);
      expect(response.json()).toMatchObject({ code: 'settlement_in_progress' });
    }
  });
});

describe('recovery', () => {
  it('leaves an intent settling after a crash between broadcast and update; reconcile settles it without a second transfer', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '50');
    const intent = (await createIntent(app, shop, { amountUsdCents: 750 })).json();
    const challenge = await challengeOf(app, intent.id);
    const { header } = await signPayment(payer, challenge);
    const payerBefore = await balanceOf(app, payer.address);

    faults.crashAfterBroadcast();
    const crashed = await pay(app, intent.id, { 'payment-signature': header });
    expect(crashed.statusCode).toBe(503);
    expect(crashed.headers['retry-after']).toBeDefined();
    expect(crashed.json()).toMatchObject({ code: 'settlement_result_unknown' });
    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(1);
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settling', transactionHash: null, failureCode: 'settlement_result_unknown' });

    // The payer retrying cannot pay twice.
    expect((await pay(app, intent.id, { 'payment-signature': header })).json().code).toBe('settlement_in_progress');
    const another = await pay(app, intent.id, { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(another.json()).toMatchObject({ code: 'settlement_in_progress' });

    const reconciled: Record<string, unknown> = await eventually(async () => {
      const response = await reconcile(app, shop.apiKey, intent.id);
      expect(response.statusCode).toBe(200);
      return response.json().status === 'settled' ? response.json() : null;
    });
    expect(reconciled).toMatchObject({ status: 'settled', transactionHash: transfers[0].transactionHash, failureCode: null, failureMessage: null });
    expect(reconciled.settledAt).not.toBeNull();
    // Idempotent, and the payer's retry now gets the settled result.
    expect((await reconcile(app, shop.apiKey, intent.id)).json()).toEqual(reconciled);
    const retried = await pay(app, intent.id, { 'payment-signature': header });
    expect(retried.statusCode).toBe(200);
    expect(retried.json().settlement.transaction).toBe(transfers[0].transactionHash);
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
    expect(await balanceOf(app, payer.address)).toBe(payerBefore - 7_500_000n);
  });

  it('answers 503 reconciliation_unavailable when the index cannot be read, and the intent stays settling', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    faults.onNextSettle(async () => ({ kind: 'unknown', transaction: null, message: 'lost answer (injected)' }));
    await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) });
    faults.setChainDown(true);
    try {
      const response = await reconcile(app, shop.apiKey, intent.id);
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBeDefined();
      expect(response.json()).toMatchObject({ code: 'reconciliation_unavailable' });
    } finally {
      faults.setChainDown(false);
    }
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settling' });
    // Nothing was broadcast and the authorization is still valid: reconcile keeps it settling.
    expect((await reconcile(app, shop.apiKey, intent.id)).json()).toMatchObject({ status: 'settling', failureCode: 'settlement_result_unknown' });
  });
});

describe('settlement outcomes', () => {
  it('keeps the intent payable, with the facilitator’s reason recorded, when a settle is refused and nothing moved', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '10');
    const intent = (await createIntent(app, shop, { amountUsdCents: 500 })).json();
    const header = await signedHeader(app, intent.id, payer);
    // Between verify and settle the payer moves its money away: the transfer cannot happen.
    faults.onNextSettle(async (real) => {
      const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
      const hash = await wallet.writeContract({
        address: app.ctx.chain.asset.address,
        abi: usdgAbi,
        functionName: 'transfer',
        args: [privateKeyToAccount(generatePrivateKey()).address, await balanceOf(app, payer.address)],
      });
      await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
      return real();
    });
    const refused = await pay(app, intent.id, { 'payment-signature': header });
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ x402Version: 2, error: expect.stringMatching(/insufficient_balance|transaction_failed/) });
    expect(refused.headers['payment-response']).toBeDefined();
    const stored = await getIntent(app, shop.apiKey, intent.id);
    expect(stored).toMatchObject({
      status: 'pending',
      transactionHash: null,
      failureCode: null,
      lastPaymentError: { code: refused.json().error, message: expect.any(String), at: expect.any(String) },
    });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(0);

    // Still payable: the challenge, and a new payment once the payer holds the money again.
    expect((await pay(app, intent.id)).statusCode).toBe(402);
    await app.ctx.chain.devchain!.fund(payer.address, '5');
    expect((await pay(app, intent.id, { 'payment-signature': await signedHeader(app, intent.id, payer) })).statusCode).toBe(200);
    expect((await transfersTo(app, shop.payTo)).map((t) => t.args.value)).toEqual([5_000_000n]);
  });

  it('answers 503 facilitator_unavailable and keeps the intent pending when settle cannot reach the facilitator', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
    const header = await signedHeader(app, intent.id, payer);
    faults.onNextSettle(async () => ({ kind: 'unavailable', message: 'connection refused (injected)' }));
    const refused = await pay(app, intent.id, { 'payment-signature': header });
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'facilitator_unavailable' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', failureCode: null });
    // Nothing happened, so the very same payment can be retried.
    const retried = await pay(app, intent.id, { 'payment-signature': header });
    expect(retried.statusCode).toBe(200);
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);
  });

  it('refuses a replayed settlement: an authorization first settled elsewhere does not pay the intent', async () => {
    const shop = await freshShop();
    const payer = await fundedPayer(app, '20');
    const intent = (await createIntent(app, shop, { amountUsdCents: 100 })).json();
    const challenge = await challengeOf(app, intent.id);
    const { header, payload } = await signPayment(payer, challenge);
    // Between the intent's verify and its settle, the same authorization is settled through our
    // facilitator directly (e.g. for the merchant's other x402 endpoint with the same terms).
    let direct: { success: boolean; transaction: string } | undefined;
    faults.onNextSettle(async (real) => {
      direct = await app.ctx.facilitator!.settle(payload, challenge.accepts[0]);
      return real();
    });
    const replayed = await pay(app, intent.id, { 'payment-signature': header });
    expect(direct).toMatchObject({ success: true });
    expect(replayed.statusCode).toBe(409);
    expect(replayed.json()).toMatchObject({ code: 'payment_authorization_already_used' });
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'pending', transactionHash: null, failureCode: null });
    expect(await transfersTo(app, shop.payTo)).toHaveLength(1);

    // The authorization stays reserved; a new one pays the intent with its own transfer.
    expect((await pay(app, intent.id, { 'payment-signature': header })).json()).toMatchObject({ code: 'payment_authorization_already_used' });
    const paid = await pay(app, intent.id, { 'payment-signature': (await signPayment(payer, challenge)).header });
    expect(paid.statusCode).toBe(200);
    const transfers = await transfersTo(app, shop.payTo);
    expect(transfers).toHaveLength(2);
    expect(paid.json().settlement.transaction).not.toBe(direct!.transaction);
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', transactionHash: paid.json().settlement.transaction });
  });
});
