// A checkout anyone can pay (issue 32), in Debian's Chromium. Without a browser wallet the page gives the
// payee, the amount in USDG, the pay URL and two snippets; each snippet is copied off the page and run as is
// (the @x402/fetch one by Node, the curl one by bash with a Tollgate wallet's key) while the page is open, and
// the open page turns settled. A wallet that lacks the chain gets it added (wallet_addEthereumChain after
// 4902) and is offered the token; the settled page shows the whole transaction, copyable and linked to the
// payment in the explorer, and the way back to the merchant. At 390 px nothing scrolls sideways.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { createShop, uniqueExternalId, type Shop } from '../intents/fixtures.js';
import { balanceOf, buildPayApp, fundedPayer, getIntent, signedHeader } from '../intents/harness.js';
import { createWallet, freePort, settledPayment, type PaidPayment } from '../wallets/helpers.js';
import { browserMissing, injectWallet, launchChromium, screenshot, type TestWalletOptions, type TestBrowser } from './browser.js';

const run = promisify(execFile);
const ARTIFACTS = path.join(path.dirname(fileURLToPath(import.meta.url)), '.artifacts');
const PHONE = { width: 390, height: 844 };

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;
let chainId: number;
const requests: { url: string; authorization?: string }[] = [];
const cspErrors: string[] = [];

beforeAll(async () => {
  if (browserMissing) return;
  // The API's port is fixed up front so that a Tollgate wallet's pay-and-call may reach its loopback origin.
  const port = await freePort();
  app = await buildPayApp({ env: { API_PORT: String(port), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${port}` } });
  shop = await createShop(app, 'anyone-merchant');
  chainId = app.ctx.chain.chainId;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function newIntent(amountUsdCents: number, extra: Record<string, unknown> = {}) {
  const created = await fetch(`${app.urls.api}/v1/payment-intents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents, externalId: uniqueExternalId(), description: 'Order #2001', ...extra }),
  });
  expect(created.status, await created.clone().text()).toBe(201);
  return (await created.json()) as { id: string; paymentUrl: string; expiresAt: string };
}

/** A page in its own context (clipboard allowed), watched for credentials and CSP refusals. */
async function openPage(options: { viewport?: { width: number; height: number } } = {}): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.urls.api });
  const page = await context.newPage();
  page.on('request', (request) => requests.push({ url: request.url(), authorization: request.headers().authorization }));
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspErrors.push(message.text());
  });
  return { page, context };
}

const clipboard = (page: Page) => page.evaluate<string>('navigator.clipboard.readText()');
const scrollWidth = (page: Page) => page.evaluate<number>('document.scrollingElement.scrollWidth');

describe.skipIf(browserMissing)('a checkout anyone can pay, in Chromium', () => {
  it('without a wallet: payee, USDG amount and pay URL to copy; the @x402/fetch snippet run as is pays, and the open page (390 px) turns settled with the whole transaction, copyable, linked to the payment in the explorer', async () => {
    const intent = await newIntent(1234);
    const { page, context } = await openPage({ viewport: PHONE });
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByRole('status').first().textContent()).toContain('No browser wallet was found');
    expect(await page.getByTestId('payee').textContent()).toBe(shop.payTo);
    expect(await page.locator('main').textContent()).toContain('store');
    expect(await page.getByTestId('token-amount').textContent()).toBe('12.34 USDG');
    expect(await page.getByTestId('pay-url').textContent()).toBe(intent.paymentUrl);
    expect(await page.getByRole('heading', { name: 'Pay with an x402 client' }).count()).toBe(1);
    // The favicon is inline (the CSP allows data: images), so no /favicon.ico is asked for.
    expect(await page.locator('link[rel=icon]').getAttribute('href')).toMatch(/^data:image\/svg\+xml,/);
    await page.evaluate('window.__sameDocument = true');

    await page.getByRole('button', { name: 'Copy the pay URL' }).click();
    await expect.poll(() => clipboard(page)).toBe(intent.paymentUrl);
    const snippet = (await page.getByTestId('snippet-x402-fetch').textContent())!;
    await page.getByRole('button', { name: 'Copy the @x402/fetch snippet' }).click();
    await expect.poll(() => clipboard(page)).toBe(snippet);
    expect(snippet).toContain(`'${intent.paymentUrl}'`);
    expect(snippet).toContain(`maxAmountPerPayment: '12340000'`);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);
    await screenshot(page, 'checkout-phone');

    // The payer pastes the snippet into pay.mjs and runs it with their key: the official client pays.
    const key = generatePrivateKey();
    const payer = privateKeyToAccount(key).address;
    await app.ctx.chain.devchain!.fund(payer, '20');
    const before = await balanceOf(app, shop.payTo);
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, `pay-${intent.id}.mjs`);
    writeFileSync(file, snippet);
    const { stdout } = await run(process.execPath, [file], { env: { ...process.env, PRIVATE_KEY: key }, timeout: 60_000 });
    expect(stdout).toMatch(/^200 /);

    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('settled');
    const settled = await getIntent(app, shop.apiKey, intent.id);
    expect(settled.status).toBe('settled');
    const hash = settled.transactionHash as string;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    const transaction = page.getByTestId('transaction');
    expect(await transaction.textContent()).toBe(hash);
    expect(await page.evaluate('window.__sameDocument')).toBe(true);
    expect(await balanceOf(app, shop.payTo)).toBe(before + 12_340_000n);
    expect(await balanceOf(app, payer)).toBe(20_000_000n - 12_340_000n);
    expect(await page.getByRole('button', { name: /^Pay/ }).count()).toBe(0);

    await page.getByRole('button', { name: 'Copy the transaction hash' }).click();
    await expect.poll(() => clipboard(page)).toBe(hash);
    // The link names the payment by its transaction (to this payee): the explorer finds it there once indexed.
    expect(await transaction.getAttribute('href')).toBe(`/app/#/explorer?${new URLSearchParams({ transaction: hash, recipient: shop.payTo })}`);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);
    await screenshot(page, 'checkout-paid-phone');

    await transaction.click();
    await expect.poll(() => page.locator('tbody tr').first().locator(`[title="${hash}"]`).count(), { timeout: 15_000 }).toBe(1);
    await context.close();
  });

  it('pays by the curl snippet with a Tollgate wallet (pay-and-call) run as is, and the open page turns settled', async () => {
    const intent = await newIntent(250);
    const { wallet, secret } = await createWallet(app, await app.mgmtSecret('checkout-payer'), 'checkout-payer');
    expect(secret).toMatch(/^svc_wallet_/);
    await app.ctx.chain.devchain!.fund(wallet.address, '5');
    const { page, context } = await openPage();
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');

    const snippet = (await page.getByTestId('snippet-pay-and-call').textContent())!;
    expect(snippet).toContain(`${app.urls.api}/v1/wallets/me/pay-and-call`);
    const { stdout } = await run('bash', ['-c', snippet], { env: { ...process.env, TOLLGATE_WALLET_KEY: secret }, timeout: 60_000 });
    const answer = JSON.parse(stdout) as { data: { upstream: { status: number }; payment: PaidPayment & { settlement: { transaction: string } } } };
    expect(answer.data.upstream.status).toBe(200);
    // Answered on the intent's settlement (pending, its transaction in settlement); the wallet's record is then settled by the chain.
    expect(answer.data.payment).toMatchObject({ status: 'pending', amount: '2500000' });
    const transaction = answer.data.payment.settlement.transaction;
    expect((await settledPayment(app, secret, answer.data.payment)).transaction).toBe(transaction);

    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('settled');
    expect(await page.getByTestId('transaction').textContent()).toBe(transaction);
    expect((await getIntent(app, shop.apiKey, intent.id)).transactionHash).toBe(transaction);
    await context.close();
  });

  async function walletPage(options: TestWalletOptions) {
    const account = privateKeyToAccount(generatePrivateKey());
    await app.ctx.chain.devchain!.fund(account.address, '10');
    const { page, context } = await openPage();
    const wallet = await injectWallet(page, account, chainId, options);
    return { page, context, wallet };
  }

  it('adds the chain to a wallet that lacked it (4902 until wallet_addEthereumChain), offers it USDG, then pays', async () => {
    const intent = await newIntent(300);
    const { page, context, wallet } = await walletPage({ startOn: 1, knows: [1] });
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    // The other ways stay at hand, folded under the wallet's button.
    expect(await page.locator('details.ways summary').textContent()).toBe('Other ways to pay');

    await page.getByRole('button', { name: 'Pay $3.00 with your wallet' }).click();
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 30_000 }).toBe('settled');
    expect(wallet.calls).toEqual([
      'eth_requestAccounts',
      'eth_chainId',
      'wallet_switchEthereumChain', // 4902: unknown
      'wallet_addEthereumChain',
      'wallet_switchEthereumChain',
      'wallet_watchAsset',
      'eth_signTypedData_v4',
    ]);
    const params = (method: string) => wallet.requests.filter((r) => r.method === method).map((r) => r.params);
    expect(params('wallet_switchEthereumChain')).toEqual([[{ chainId: `0x${chainId.toString(16)}` }], [{ chainId: `0x${chainId.toString(16)}` }]]);
    expect(params('wallet_addEthereumChain')).toEqual([
      [{ chainId: `0x${chainId.toString(16)}`, chainName: 'Tollgate devchain', rpcUrls: [app.ctx.chain.rpcUrl], nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 } }],
    ]);
    expect(params('wallet_watchAsset')).toEqual([{ type: 'ERC20', options: { address: app.ctx.chain.asset.address, symbol: 'USDG', decimals: 6 } }]);
    expect(wallet.chainId()).toBe(chainId);
    expect((await getIntent(app, shop.apiKey, intent.id)).status).toBe('settled');
    await context.close();
  });

  it('switches a wallet that knows the chain, and pays although the payer refuses the token offer', async () => {
    const intent = await newIntent(300);
    const { page, context, wallet } = await walletPage({ startOn: 1, knows: [1, chainId], watchAsset: 'refuse' });
    await page.goto(intent.paymentUrl);
    await page.getByRole('button', { name: 'Pay $3.00 with your wallet' }).click();
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 30_000 }).toBe('settled');
    expect(wallet.calls).toEqual(['eth_requestAccounts', 'eth_chainId', 'wallet_switchEthereumChain', 'wallet_watchAsset', 'eth_signTypedData_v4']);
    await context.close();
  });

  it('says in words when the wallet lacks the chain and this service publishes none (no /dev/chain); nothing signed, the other ways remain', async () => {
    const intent = await newIntent(300);
    const { page, context, wallet } = await walletPage({ startOn: 1, knows: [1] });
    await page.route('**/dev/chain', (route) => route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found","message":"Not found"}}' }));
    await page.goto(intent.paymentUrl);
    await page.getByRole('button', { name: 'Pay $3.00 with your wallet' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain(`Your wallet does not know chain ${chainId}`);
    expect(wallet.calls).not.toContain('eth_signTypedData_v4');
    expect(wallet.calls).not.toContain('wallet_addEthereumChain');
    expect(await page.getByTestId('status').textContent()).toBe('pending');
    await page.locator('details.ways summary').click();
    expect(await page.getByTestId('pay-url').textContent()).toBe(intent.paymentUrl);
    await context.close();
  });

  it('offers the way back once settled: an <a> to exactly the returnUrl, rel=noopener; never one that is not http(s)', async () => {
    const returnUrl = 'http://127.0.0.1:9/shop/orders/2001?paid=1#thanks';
    const intent = await newIntent(150, { returnUrl });
    const { page, context } = await openPage({ viewport: PHONE });
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByTestId('return').count()).toBe(0); // not before it is paid

    const paid = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, intent.id, await fundedPayer(app, '5')) } });
    expect(paid.status).toBe(200);
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('settled');
    const back = page.getByRole('link', { name: 'Back to store' });
    expect(await back.getAttribute('href')).toBe(returnUrl);
    expect(await back.getAttribute('rel')).toBe('noopener');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(390);

    // The server refuses such URLs at creation; the page refuses them too, whatever the view says.
    for (const bad of ['javascript:alert(1)', ' JaVaScRiPt:alert(1)', 'data:text/html,<script>alert(1)</script>', '//evil.example/', '/relative', 'ftp://example.com/']) {
      await page.route('**/checkout', async (route) => {
        const response = await route.fetch();
        await route.fulfill({ response, json: { ...(await response.json()), returnUrl: bad } });
      });
      await page.reload();
      await expect.poll(() => page.getByTestId('status').textContent()).toBe('settled');
      expect(await page.getByTestId('return').count(), bad).toBe(0);
      expect(await page.locator('a[href^="javascript" i], a[href^=" javascript" i], a[href^="data:" i]').count()).toBe(0);
      await page.unrouteAll();
    }
    await context.close();
  });

  it('shows no snippet when a value in it would need quoting in a shell or a JS string', async () => {
    const intent = await newIntent(100);
    const { page, context } = await openPage();
    // A view whose id could end the quotes around the URL in the snippets (the server's ids are UUIDs).
    await page.route('**/checkout', async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, json: { ...(await response.json()), id: "x';touch /tmp/pwned;'" } });
    });
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByTestId('pay-url').textContent()).toContain('/v1/payment-intents/');
    expect(await page.getByTestId('snippet-x402-fetch').count()).toBe(0);
    expect(await page.getByTestId('snippet-pay-and-call').count()).toBe(0);
    await context.close();
  });

  it('says "Expires in …", then live "Expired … ago" with no way left to pay, without a reload', async () => {
    const intent = await newIntent(100);
    const { page, context } = await openPage();
    const expiresAt = Date.parse(intent.expiresAt);
    // The service's clock as the page reads it, the Date of the answers it polls, moved here (the payer's own
    // clock does not count: checkout-clock.test.ts); the page's timers keep running.
    let serviceNow = expiresAt - 100_000;
    await page.route('**/v1/payment-intents/*/checkout', async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, headers: { ...response.headers(), date: new Date(serviceNow).toUTCString() } });
    });
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByTestId('expiry').textContent()).toBe('Expires in 2 min');
    await page.evaluate('window.__sameDocument = true');

    serviceNow = expiresAt + 9_500; // Date has whole seconds: the page takes the middle of this one
    // Read at the page's next poll (every 2 s).
    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 10_000 }).toBe('expired');
    await expect.poll(() => page.getByTestId('expiry').textContent(), { timeout: 3000 }).toBe('Expired 10 s ago');
    expect(await page.getByRole('alert').textContent()).toContain('This payment request has expired');
    expect(await page.getByRole('button').count()).toBe(0);
    serviceNow = expiresAt + 129_500;
    await expect.poll(() => page.getByTestId('expiry').textContent(), { timeout: 10_000 }).toBe('Expired 2 min ago');
    expect(await page.evaluate('window.__sameDocument')).toBe(true);
    await context.close();
  });

  it('keeps the first load within 30 KB of JavaScript, gzipped', async () => {
    const intent = await newIntent(100);
    const html = await (await fetch(intent.paymentUrl, { headers: { accept: 'text/html' } })).text();
    const scripts = [...html.matchAll(/<(?:script|link)[^>]+(?:src|href)="(\/app\/assets\/[^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    let gzipped = 0;
    for (const script of scripts) {
      const response = await fetch(`${app.urls.api}${script}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(response.headers.get('content-encoding')).toBe('gzip');
      // fetch decompresses: the bytes on the wire are the content-length the server sent.
      gzipped += Number(response.headers.get('content-length'));
      await response.arrayBuffer();
    }
    expect(gzipped).toBeGreaterThan(0);
    expect(gzipped).toBeLessThanOrEqual(30 * 1024);
  });

  it('sent no credential from any checkout page, and the CSP refused nothing', () => {
    const checkout = requests.filter((r) => r.url.startsWith(app.urls.api));
    expect(checkout.length).toBeGreaterThan(10);
    expect(checkout.filter((r) => r.authorization)).toEqual([]);
    expect(cspErrors).toEqual([]);
  });
});
