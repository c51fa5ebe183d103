// The checkout's details (issue 45 item 4) in Chromium: focus lands on the result after Pay; "Submitted, waiting for
// the chain" while the settle is slow; the paid page names the payer; expired and failed pages say one thing in words,
// never a code; touch targets are at least 44 px; the network is named; with a returnUrl, a cancel link back to the
// merchant before paying (and only then). And axe-core finds no violation on the
// pending, paid, expired and failed pages at 390, 768 and 1280 px.
import { eq } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentIntents } from '../../src/modules/intents/tables.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';
import { buildPayApp, fundedPayer, signedHeader } from '../intents/harness.js';
import { axeViolations } from './axe.js';
import { browserMissing, injectWallet, launchChromium, type TestBrowser } from './browser.js';

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp();
  shop = await createShop(app, 'details-merchant');
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

/** Buttons, button-links and disclosure summaries smaller than 44 × 44 px (inline links in a sentence are exempt). */
const SMALL_TARGETS = `[...document.querySelectorAll('button, a.button, a.cancel, summary')]
  .filter((el) => el.getClientRects().length > 0)
  .map((el) => [el.textContent.trim(), el.getBoundingClientRect()])
  .filter(([, r]) => r.height < 44 || r.width < 44)
  .map(([text, r]) => text + ' ' + Math.round(r.width) + 'x' + Math.round(r.height))`;

async function payerPage(usdg: string, viewport = { width: 390, height: 844 }) {
  const account = privateKeyToAccount(generatePrivateKey());
  if (usdg !== '0') await app.ctx.chain.devchain!.fund(account.address, usdg);
  const context = await browser.newContext({ viewport, bypassCSP: true });
  const page = await context.newPage();
  const wallet = await injectWallet(page, account, 4663);
  return { page, wallet, address: account.address, context };
}

describe.skipIf(browserMissing)('the checkout, item by item', () => {
  it('after Pay the result has the focus, while the chain is slow it says so, and the paid page names the payer', async () => {
    const intent = (await createIntent(app, shop, { amountUsdCents: 321 })).json();
    const { page, wallet, address, context } = await payerPage('10');
    await page.goto(intent.paymentUrl);
    await page.getByRole('button', { name: /^Pay \$3\.21/ }).waitFor();
    // Declined: the refusal is focused (the button pressed is still there, but the words are what matter now).
    wallet.declineNext();
    await page.getByRole('button', { name: /^Pay \$3\.21/ }).click();
    await expect.poll(() => page.evaluate(`document.activeElement?.getAttribute('role')`)).toBe('alert');
    expect(await page.evaluate('document.activeElement?.textContent')).toContain('You declined');

    // A slow settle: the signed payment's POST is held back two seconds.
    await page.route(intent.paymentUrl, async (route) => {
      if (route.request().headers()['payment-signature']) await new Promise((resolve) => setTimeout(resolve, 2_000));
      await route.continue();
    });
    await page.getByRole('button', { name: /^Pay \$3\.21/ }).click();
    // The wallet's steps come first (its account, the 402, the signature): on a loaded machine they take over a second.
    await expect.poll(() => page.locator('button').first().textContent(), { timeout: 10_000 }).toBe('Submitted, waiting for the chain…');
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 20_000 }).toBe('settled');
    await expect.poll(() => page.evaluate(`document.activeElement?.className`)).toBe('notice success');
    expect(await page.getByTestId('payer').textContent()).toContain(address);
    await context.close();
  }, 60_000);

  it('expired and failed pages say one notice in words, never the code', async () => {
    const { page, context } = await payerPage('0');
    for (const failureCode of ['settlement_mismatch', 'payment_already_used', 'invalid_exact_evm_nonce_already_used']) {
      const intent = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
      await app.ctx.db.update(paymentIntents).set({ status: 'failed', failureCode }).where(eq(paymentIntents.id, intent.id));
      await page.goto(intent.paymentUrl);
      await expect.poll(() => page.getByTestId('status').textContent()).toBe('failed');
      expect(await page.locator('.notice').count()).toBe(1);
      expect(await page.locator('main').textContent()).not.toContain(failureCode);
    }
    const expired = (await createIntent(app, shop, { amountUsdCents: 300 })).json();
    await app.ctx.db.update(paymentIntents).set({ status: 'expired' }).where(eq(paymentIntents.id, expired.id));
    await page.goto(expired.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('expired');
    expect(await page.locator('.notice').count()).toBe(1);
    await context.close();
  });

  it('touch targets are at least 44 px, and the network is named, on a phone with and without a wallet', async () => {
    const intent = (await createIntent(app, shop, { amountUsdCents: 500, returnUrl: 'https://shop.example/cart' })).json();
    const withWallet = await payerPage('0');
    await withWallet.page.goto(intent.paymentUrl);
    await withWallet.page.getByRole('button', { name: /^Pay \$5\.00/ }).waitFor();
    // Open every disclosure, so its buttons are measured too.
    await withWallet.page.evaluate(`document.querySelectorAll('details').forEach((d) => (d.open = true))`);
    expect(await withWallet.page.evaluate(SMALL_TARGETS)).toEqual([]);
    expect(await withWallet.page.getByTestId('network').textContent()).toBe('Robinhood Chain');
    // Before paying, with a wallet too: the way back to the merchant without paying.
    expect(await withWallet.page.getByTestId('cancel').getAttribute('href')).toBe('https://shop.example/cart');
    await withWallet.context.close();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.goto(intent.paymentUrl);
    await page.getByTestId('deposit-qr').waitFor();
    expect(await page.evaluate(SMALL_TARGETS)).toEqual([]);
    await context.close();
  });

  it('axe-core: no violations on the pending, paid, expired and failed pages at 390, 768 and 1280 px', async () => {
    const pending = (await createIntent(app, shop, { amountUsdCents: 700, description: 'Axe check', returnUrl: 'https://shop.example/a' })).json();
    const paid = (await createIntent(app, shop, { amountUsdCents: 701, returnUrl: 'https://shop.example/b' })).json();
    const paidAnswer = await fetch(paid.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, paid.id, await fundedPayer(app, '10')) } });
    expect(paidAnswer.status, await paidAnswer.clone().text()).toBe(200);
    const expired = (await createIntent(app, shop, { amountUsdCents: 702 })).json();
    await app.ctx.db.update(paymentIntents).set({ status: 'expired' }).where(eq(paymentIntents.id, expired.id));
    const failed = (await createIntent(app, shop, { amountUsdCents: 703 })).json();
    await app.ctx.db.update(paymentIntents).set({ status: 'failed', failureCode: 'settlement_mismatch' }).where(eq(paymentIntents.id, failed.id));
    const found: Record<string, string[]> = {};
    for (const width of [390, 768, 1280]) {
      for (const [name, intent, status, wallet] of [['pending', pending, 'pending', false], ['pending, wallet', pending, 'pending', true], ['paid', paid, 'settled', false], ['expired', expired, 'expired', false], ['failed', failed, 'failed', false]] as const) {
        const { page, context } = wallet ? await payerPage('0', { width, height: 900 }) : await (async () => {
          const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
          return { page: await context.newPage(), context };
        })();
        await page.goto(intent.paymentUrl);
        await expect.poll(() => page.getByTestId('status').textContent()).toBe(status);
        await page.evaluate(`document.querySelectorAll('details').forEach((d) => (d.open = true))`);
        found[`${name} @${width}`] = await axeViolations(page);
        // The cancel link only before paying (returnUrl set on pending and paid); once paid, the way back instead.
        if (width === 390) expect({ name, cancel: await page.getByTestId('cancel').count(), back: await page.getByTestId('return').count() }).toEqual({ name, cancel: name.startsWith('pending') ? 1 : 0, back: name === 'paid' ? 1 : 0 });
        expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(width);
        await context.close();
      }
    }
    expect(Object.entries(found).filter(([, violations]) => violations.length > 0)).toEqual([]);
  }, 120_000);
});
