// A payer whose clock is hours off pays (issue 43, item 4). The checkout signs the authorization's window on
// the service's clock, read from this origin's Date headers, not the browser's: Chromium with the page's clock
// moved two hours either way pays an intent that lives one hour, and sees its expiry as the service does. The
// devchain's time, which the facilitator judges validBefore by, is the real time.
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { createShop, uniqueExternalId, type Shop } from '../intents/fixtures.js';
import { balanceOf, buildPayApp, getIntent } from '../intents/harness.js';
import { browserMissing, injectWallet, launchChromium, type TestBrowser } from './browser.js';

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;
const HOUR = 3600_000;
const PAY_TIMEOUT_SECONDS = 300;

beforeAll(async () => {
  if (browserMissing) return;
  // Intents live an hour: two hours ahead, a page on its own clock would call a fresh one expired.
  app = await buildPayApp({ env: { INTENT_LIFETIME_SECONDS: '3600', INTENT_PAY_TIMEOUT_SECONDS: String(PAY_TIMEOUT_SECONDS) } });
  shop = await createShop(app, 'clock-merchant');
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function newIntent(amountUsdCents: number) {
  const created = await fetch(`${app.urls.api}/v1/payment-intents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents, externalId: uniqueExternalId() }),
  });
  expect(created.status).toBe(201);
  return (await created.json()) as { id: string; paymentUrl: string };
}

describe.skipIf(browserMissing)('checkout with the payer’s clock off', () => {
  it('the 402 of a pay URL carries the service’s time in its Date header', async () => {
    const intent = await newIntent(100);
    const asked = await fetch(intent.paymentUrl, { method: 'POST' });
    expect(asked.status).toBe(402);
    const date = Date.parse(asked.headers.get('date') ?? '');
    expect(Math.abs(date - Date.now())).toBeLessThan(3000);
  });

  it.each([
    ['two hours ahead', 2 * HOUR],
    ['two hours behind', -2 * HOUR],
  ])('pays with the page’s clock %s', async (_words, skew) => {
    const intent = await newIntent(150);
    const account = privateKeyToAccount(generatePrivateKey());
    await app.ctx.chain.devchain!.fund(account.address, '5');
    const page = await browser.newPage();
    // The page's clock (Date and its timers) starts `skew` away from the real time and runs on from there.
    await page.clock.install({ time: Date.now() + skew });
    const wallet = await injectWallet(page, account, Number(app.ctx.chain.network.split(':')[1]));
    const before = await balanceOf(app, shop.payTo);

    await page.goto(intent.paymentUrl);
    expect(Math.abs((await page.evaluate(() => Date.now())) - Date.now() - skew)).toBeLessThan(60_000);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    // An hour on the service's clock (60 min, or 1 h a moment before the second turns), not 3 h nor expired.
    expect(await page.getByTestId('expiry').textContent()).toMatch(/^Expires in (60 min|1 h)$/);

    await page.getByRole('button', { name: 'Pay $1.50 with your wallet' }).click();
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 30_000 }).toBe('settled');
    expect(await page.getByRole('alert').count()).toBe(0);

    // What the wallet signed: a window on the real clock, whatever the page's.
    const signed = wallet.requests.find((r) => r.method === 'eth_signTypedData_v4')!.params as [string, string];
    const { validAfter, validBefore } = JSON.parse(signed[1]).message as { validAfter: string; validBefore: string };
    expect(validAfter).toBe('0');
    expect(Math.abs(Number(validBefore) - (Date.now() / 1000 + PAY_TIMEOUT_SECONDS))).toBeLessThan(30);
    expect((await getIntent(app, shop.apiKey, intent.id)).status).toBe('settled');
    expect(await balanceOf(app, shop.payTo)).toBe(before + 1_500_000n);
    await page.close();
  });
});
