// The hosted checkout in a real browser (Debian's Chromium): a payer opens an intent's paymentUrl, pays
// it with an injected EIP-1193 wallet (a real EIP-712 signature over USDG's EIP-3009 transfer), and sees
// it settled with its transaction; the money moved once on the devchain. An open page follows a payment made
// elsewhere until it shows settled, without a reload. Declined signatures, expired
// and unknown intents get clear words; no API key ever reaches the page.
import { eq } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentIntents } from '../../src/modules/intents/tables.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { createShop, uniqueExternalId, type Shop } from '../intents/fixtures.js';
import { balanceOf, buildPayApp, fundedPayer, getIntent, signedHeader } from '../intents/harness.js';
import { browserMissing, injectWallet, launchChromium, screenshot, type TestBrowser } from './browser.js';

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;
const clock = new ManualClock();
const requests: { url: string; authorization?: string }[] = [];

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp({ clock });
  shop = await createShop(app, 'checkout-merchant');
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function newIntent(amountUsdCents = 1234, description = 'Order #1042 — 3 API credits packs') {
  const created = await fetch(`${app.urls.api}/v1/payment-intents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents, externalId: uniqueExternalId(), description }),
  });
  expect(created.status).toBe(201);
  return (await created.json()) as { id: string; paymentUrl: string };
}

async function payerPage(usdg: string): Promise<{ page: Page; wallet: Awaited<ReturnType<typeof injectWallet>>; address: `0x${string}` }> {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdg !== '0') await app.ctx.chain.devchain!.fund(account.address, usdg);
  const page = await browser.newPage();
  page.on('request', (request) => requests.push({ url: request.url(), authorization: request.headers().authorization }));
  const wallet = await injectWallet(page, account, Number(app.ctx.chain.network.split(':')[1]));
  return { page, wallet, address: account.address };
}

describe.skipIf(browserMissing)('hosted checkout in Chromium', () => {
  it('pays an intent with the injected wallet and shows it settled with its transaction', async () => {
    const intent = await newIntent();
    const { page, wallet, address } = await payerPage('50');
    const before = await balanceOf(app, shop.payTo);

    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.locator('main').textContent()).toContain('store');
    expect(await page.locator('h1').textContent()).toContain('$12.34');
    await screenshot(page, 'checkout');

    await page.getByRole('button', { name: 'Pay $12.34 with your wallet' }).click();
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 30_000 }).toBe('settled');
    const settled = await getIntent(app, shop.apiKey, intent.id);
    expect(settled.status).toBe('settled');
    expect(await page.getByTestId('transaction').getAttribute('title')).toBe(settled.transactionHash);
    await screenshot(page, 'checkout-paid');

    expect(wallet.calls).toEqual(['eth_requestAccounts', 'eth_chainId', 'eth_signTypedData_v4']);
    expect(await balanceOf(app, shop.payTo)).toBe(before + 12_340_000n);
    expect(await balanceOf(app, address)).toBe(50_000_000n - 12_340_000n);

    // A reload of a paid intent says so, and offers no second payment.
    await page.reload();
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('settled');
    expect(await page.getByRole('button', { name: /^Pay/ }).count()).toBe(0);
    expect(await page.getByTestId('transaction').textContent()).toBe(settled.transactionHash);
    await page.close();
  });

  it('follows an open page live: paid from elsewhere, it shows settled with its transaction without a reload', async () => {
    const intent = await newIntent(250, 'Paid from another device');
    const page = await browser.newPage();
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    // A mark on this document: a reload would lose it.
    await page.evaluate('window.__sameDocument = true');

    // Paid through the API by an x402 client, as any payer outside this page would.
    const paid = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, intent.id, await fundedPayer(app, '10')) } });
    expect(paid.status).toBe(200);
    const settled = await getIntent(app, shop.apiKey, intent.id);
    expect(settled.status).toBe('settled');

    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('settled');
    expect(await page.getByTestId('transaction').getAttribute('title')).toBe(settled.transactionHash);
    expect(await page.evaluate('window.__sameDocument')).toBe(true);
    expect(await page.getByRole('button', { name: /^Pay/ }).count()).toBe(0);
    await page.close();
  });

  it('says so when the payer declines in the wallet or cannot pay, and the intent stays payable', async () => {
    const intent = await newIntent(500);
    const { page, wallet } = await payerPage('1');
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');

    // By keyboard alone: Tab reaches the pay button first, Enter presses it.
    wallet.declineNext();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Pay $5.00 with your wallet');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('You declined the request in your wallet. Nothing was paid.');

    // $1 of USDG against $5: the facilitator refuses, and the page says why in words.
    await page.getByRole('button', { name: /^Pay \$5\.00/ }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 30_000 }).toContain('Your wallet does not hold enough USDG');
    expect(await page.getByTestId('status').textContent()).toBe('pending');
    expect((await getIntent(app, shop.apiKey, intent.id)).status).toBe('pending');
    await page.close();
  });

  it('says in words why the last payment did not go through, live, and still offers to pay', async () => {
    const intent = await newIntent(600);
    const { page } = await payerPage('10');
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByRole('alert').count()).toBe(0);
    // Recorded as the intents module leaves it after a settle that moved nothing (docs/intents.md,
    // lastPaymentError): a payment from another tab that the balance no longer covered, then a facilitator
    // that sent nothing. The open page follows it without a reload.
    const cases: [string, string][] = [
      ['invalid_exact_evm_insufficient_balance', 'did not hold enough USDG'],
      ['facilitator_unavailable', 'could not settle it at that moment and sent nothing'],
    ];
    for (const [code, words] of cases) {
      await app.ctx.db.update(paymentIntents).set({ lastPaymentErrorCode: code, lastPaymentErrorMessage: code, lastPaymentErrorAt: new Date() }).where(eq(paymentIntents.id, intent.id));
      await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 10_000 }).toContain(words);
      expect(await page.getByRole('alert').textContent()).toContain('Nothing was charged for it, and this request can still be paid.');
      expect(await page.getByTestId('status').textContent()).toBe('pending');
      expect(await page.getByRole('button', { name: 'Pay $6.00 with your wallet' }).count()).toBe(1);
    }
    await screenshot(page, 'checkout-last-payment-error');

    // Paying now settles it, and the note goes with the pay button.
    await page.getByRole('button', { name: 'Pay $6.00 with your wallet' }).click();
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 30_000 }).toBe('settled');
    expect(await page.getByRole('alert').count()).toBe(0);
    await page.close();
  });

  it('tells a payer without a browser wallet how to pay, and an unknown link that it is unknown', async () => {
    const intent = await newIntent(100);
    const page = await browser.newPage();
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('No browser wallet was found');
    await page.goto(`${app.urls.api}/v1/payment-intents/01900000-0000-7000-8000-000000000000/pay`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Payment request not found');
    await page.close();
  });

  it('says what a failed intent means for the money by its failure code, never "no money moved" after a transfer', async () => {
    const page = await browser.newPage();
    // Failed as the intents module leaves them (docs/intents.md, failureCode values); the page reads the code
    // from the checkout view.
    const cases: [string | null, string][] = [
      ['invalid_exact_evm_transaction_failed', 'No money moved'], // the settlement transaction reverted
      ['settlement_mismatch', 'A transfer was made on chain'],
      ['payment_already_used', 'A transfer was made on chain'],
      ['invalid_exact_evm_nonce_already_used', 'check your wallet'], // used, perhaps canceled: not known
      [null, 'check your wallet'],
    ];
    for (const [failureCode, words] of cases) {
      const intent = await newIntent(300);
      await app.ctx.db.update(paymentIntents).set({ status: 'failed', failureCode }).where(eq(paymentIntents.id, intent.id));
      await page.goto(intent.paymentUrl);
      await expect.poll(() => page.getByTestId('status').textContent()).toBe('failed');
      const alert = (await page.getByRole('alert').textContent())!;
      expect(alert).toContain(words);
      if (failureCode !== 'invalid_exact_evm_transaction_failed') expect(alert).not.toContain('No money moved');
      expect(await page.getByRole('button').count()).toBe(0);
    }
    await page.close();
  });

  it('never sent an API key or any credential from a checkout page', () => {
    expect(requests.length).toBeGreaterThan(5);
    expect(requests.filter((r) => r.authorization)).toEqual([]);
  });

  it('shows an expired intent as expired, with no way to pay it', async () => {
    const intent = await newIntent(700);
    clock.advance(24 * 3600_000 + 1000); // past the intent's lifetime (INTENT_LIFETIME_SECONDS, a day)
    const { page } = await payerPage('0');
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('expired');
    expect(await page.getByRole('alert').textContent()).toContain('This payment request has expired and can no longer be paid');
    expect(await page.getByRole('button').count()).toBe(0);
    await screenshot(page, 'checkout-expired');
    await page.close();
  });
});
