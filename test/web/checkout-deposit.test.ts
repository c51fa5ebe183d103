// Paying from any wallet or exchange (issue 45): the hosted checkout on a phone (Chromium at 390 px, no browser
// wallet) shows the intent's deposit address and an EIP-681 QR code, which decodes (jsQR, from the pixels on screen)
// to exactly `ethereum:<USDG>@4663/transfer?address=<deposit>&uint256=<amount>`; a plain `transfer` from a fresh key
// (no EIP-3009 signature) settles the intent, the page turns paid and names the payer, the merchant's payTo receives
// the amount and the deposit address holds nothing afterwards. Read from the chain, not from the page's word.
import jsQRModule from 'jsqr';
import sharp from 'sharp';
import { sql } from 'drizzle-orm';
import { createWalletClient, http, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usdgAbi } from '../../src/chain/usdg-artifact.js';
import type { TestApp } from '../helpers/test-app.js';
import { createIntent, createShop, type Shop } from '../intents/fixtures.js';
import { balanceOf, buildPayApp, eventually, fundedPayer, getIntent } from '../intents/harness.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp({ env: { INTENT_RECONCILE_GRACE_SECONDS: '2' } });
  shop = await createShop(app, 'deposit-merchant');
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

// jsqr is CommonJS whose typings say `export default`: under NodeNext the default import is the module object.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule }).default ?? jsQRModule) as unknown as typeof import('jsqr').default;

/** The text of the QR code on screen, decoded from a screenshot of it (not from the page's markup). */
async function decodeQr(png: Buffer): Promise<string | null> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return jsQR(new Uint8ClampedArray(data.buffer, data.byteOffset, data.byteLength), info.width, info.height)?.data ?? null;
}

describe.skipIf(browserMissing)('the checkout on a phone, paid from any wallet', () => {
  it('shows the deposit address and a QR code of the EIP-681 transfer; a plain transfer settles it and the merchant is paid', async () => {
    const intent = (await createIntent(app, shop, { amountUsdCents: 1999, description: 'Two coffees', returnUrl: 'https://shop.example/orders/42' })).json();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    await page.goto(intent.paymentUrl);
    const qr = page.getByTestId('deposit-qr');
    await qr.waitFor();
    const address = (await page.getByTestId('deposit-address').textContent())!;
    expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const uri = `ethereum:${app.ctx.chain.asset.address}@4663/transfer?address=${address}&uint256=19990000`;
    expect(await decodeQr(await qr.screenshot())).toBe(uri);
    expect(await page.getByTestId('deposit-due').textContent()).toBe('19.99 USDG');
    expect(await page.getByTestId('network').textContent()).toBe('Robinhood Chain');
    // Before paying, the way back to the merchant without paying.
    expect(await page.getByTestId('cancel').getAttribute('href')).toBe('https://shop.example/orders/42');
    expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'checkout-deposit-phone');

    // A fresh key pays with a plain ERC-20 transfer: no signature for anyone but the chain.
    const payer = await fundedPayer(app, '50');
    const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    const hash = await wallet.writeContract({ address: app.ctx.chain.asset.address, abi: usdgAbi, functionName: 'transfer', args: [address as Address, 19_990_000n], gas: 100_000n });
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });

    await expect.poll(() => page.getByTestId('status').textContent(), { timeout: 20_000 }).toBe('settled');
    expect(await page.getByTestId('transaction').getAttribute('title')).toBe(hash);
    expect(await page.getByTestId('payer').textContent()).toContain(payer.address);
    expect(await getIntent(app, shop.apiKey, intent.id)).toMatchObject({ status: 'settled', paidVia: 'deposit', transactionHash: hash });
    // Swept: the merchant's payTo holds the amount, the deposit address nothing (and it never held gas).
    await eventually(async () => (await balanceOf(app, address as Address)) === 0n && (await balanceOf(app, shop.payTo)) === 19_990_000n, 30_000);
    expect(await app.ctx.chain.publicClient.getBalance({ address: address as Address })).toBe(0n);
    // The sweep's row is marked settled after its receipt, which the chain shows first.
    const settledSweeps = async () => (await app.ctx.database.query<{ n: number }>(sql`select count(*)::int as n from payment_intent_sweeps where intent_id = ${intent.id} and status = 'settled'`))[0]!.n;
    await expect.poll(settledSweeps, { timeout: 20_000 }).toBe(1);
    expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(390);
    await screenshot(page, 'checkout-deposit-paid-phone');
    await context.close();
  }, 90_000);

  it('underpaid: the page shows what is still due and the QR code asks for it', async () => {
    const intent = (await createIntent(app, shop, { amountUsdCents: 1000 })).json();
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const page = await context.newPage();
    await page.goto(intent.paymentUrl);
    const address = (await page.getByTestId('deposit-address').textContent())!;
    const payer = await fundedPayer(app, '50');
    const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: await wallet.writeContract({ address: app.ctx.chain.asset.address, abi: usdgAbi, functionName: 'transfer', args: [address as Address, 2_500_000n], gas: 100_000n }) });
    await expect.poll(() => page.getByTestId('deposit-due').textContent(), { timeout: 20_000 }).toBe('7.50 USDG');
    expect(await page.getByTestId('status').textContent()).toBe('pending');
    expect(await page.getByTestId('deposit-partial').textContent()).toContain('7.50 USDG is still due of 10.00 USDG');
    expect(await decodeQr(await page.getByTestId('deposit-qr').screenshot())).toBe(`ethereum:${app.ctx.chain.asset.address}@4663/transfer?address=${address}&uint256=7500000`);
    await context.close();
  }, 60_000);
});
