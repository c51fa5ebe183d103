// The merchant's dashboard (issue 45 items 2 and 3) in Chromium, each outcome read back from the API or the chain:
// name the refund wallet and refund a payer from an intent's row (paid once, on chain); the intents list shows the
// payer, a link to the transaction, totals, a search by order reference and a CSV export; an intent-events queue is
// created and chosen from the page. Every dashboard page and the explorer fit 390, 768 and 1280 px without sideways
// scroll, and axe-core finds no violation on them.
import fs from 'node:fs';
import { parseAbiItem, type Address } from 'viem';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildPayApp, eventually, fundedPayer, signedHeader } from '../intents/harness.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';
import { axeViolations } from './axe.js';

let app: TestApp;
let browser: TestBrowser;
let owner = '';
let projectId = '';
let projectKey = '';
let payTo = '' as Address;
let payer = '' as Address;
let paidId = '';
let mgmt = '';
let refundWallet: { id: string; address: Address; secret: string };

const api = async (method: string, path: string, token: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${JSON.stringify(answer)}`);
  return answer;
};

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp();
  owner = await app.identityToken('robin');
  const made = (await api('POST', '/v1/projects', owner, { name: 'Robin’s records' })).data;
  projectId = made.project.id;
  projectKey = made.apiKey.secret;
  const { privateKeyToAccount, generatePrivateKey } = await import('viem/accounts');
  payTo = privateKeyToAccount(generatePrivateKey()).address;
  const merchant = (await api('POST', `/v1/projects/${projectId}/merchants`, owner, { name: 'Record shop', payTo })).data;
  const paid = await api('POST', '/v1/payment-intents', projectKey, { merchantId: merchant.id, amountUsdCents: 2500, externalId: 'vinyl-0001' });
  paidId = paid.id;
  const account = await fundedPayer(app, '50');
  payer = account.address;
  expect((await fetch(paid.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, paid.id, account) } })).status).toBe(200);
  for (const externalId of ['vinyl-0002', 'tape-0001', 'subscription-for-customer-0f8e2a4b-7c1d-4e5f-9a3b-2c6d8e0f1a2b']) {
    await api('POST', '/v1/payment-intents', projectKey, { merchantId: merchant.id, amountUsdCents: 990, externalId });
  }
  mgmt = await app.mgmtSecret('records');
  const created = (await api('POST', '/v1/wallets', mgmt, { externalId: 'refunds', name: 'Refunds' })).data;
  refundWallet = { id: created.wallet.id, address: created.wallet.address, secret: created.credential.secret };
  await app.ctx.chain.devchain!.fund(refundWallet.address, '40');
  await eventually(async () => ((await (await fetch(`${app.urls.api}/x402scan/transactions?recipient=${payTo}`)).json()) as unknown[]).length === 1);
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

const go = (page: Page, hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);

async function signedIn(width: number): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true, acceptDownloads: true });
  const page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
  await page.goto(`${app.urls.api}/app/`);
  await page.getByLabel('User name').fill('robin');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');
  return page;
}

const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

describe.skipIf(browserMissing)('the merchant dashboard', () => {
  it('names the refund wallet and refunds a payer from the intent row, once; shows payer, transaction, totals; searches; exports CSV', async () => {
    const page = await signedIn(1280);
    await go(page, `#/projects/${projectId}`);
    await expect.poll(() => page.locator('[data-intent-id]').count()).toBe(4);
    const row = page.locator(`[data-intent-id="${paidId}"]`);
    expect(await row.getByTestId('payer').getAttribute('title')).toBe(payer);
    const intent = await api('GET', `/v1/payment-intents/${paidId}`, projectKey);
    expect(await row.locator('a[href^="#/explorer"]').getAttribute('href')).toBe(`#/explorer?${new URLSearchParams({ transaction: intent.transactionHash, recipient: payTo })}`);
    expect(await page.getByTestId('intent-totals').textContent()).toContain('4 intents; 1 settled for $25.00; received $25.00; refunded $0.00.');

    // The refund wallet, proven with one of its credentials.
    await page.getByLabel('Refund wallet id').fill(refundWallet.id);
    await page.getByLabel('Wallet credential of it').fill(refundWallet.secret);
    await page.getByRole('button', { name: 'Use this refund wallet' }).click();
    await expect.poll(async () => (await api('GET', '/v1/projects', owner)).data.find((p: { id: string }) => p.id === projectId).refundWalletId).toBe(refundWallet.id);

    // Refund $10 of the paid intent from its row: a double click refunds once.
    await row.locator('details.refunds > summary').click();
    await row.getByLabel(/Amount to refund/).fill('10.00');
    await row.getByRole('button', { name: 'Refund' }).dblclick();
    await expect.poll(async () => (await api('GET', `/v1/payment-intents/${paidId}`, projectKey)).refundedUsdCents, { timeout: 20_000 }).toBe(1000);
    await expect.poll(() => page.locator(`[data-intent-id="${paidId}"] [data-refund-id]`).count(), { timeout: 10_000 }).toBe(1);
    const refunds = await api('GET', `/v1/payment-intents/${paidId}/refunds`, projectKey);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatchObject({ status: 'succeeded', amountUsdCents: 1000, recipient: payer });
    const moved = await app.ctx.chain.publicClient.getLogs({ address: app.ctx.chain.asset.address, event: transferEvent, args: { from: refundWallet.address, to: payer }, fromBlock: 0n });
    expect(moved.map((log) => log.args.value)).toEqual([10_000_000n]);
    await expect.poll(() => page.getByTestId('intent-totals').textContent()).toContain('refunded $10.00');

    // Search by order reference (a prefix).
    await page.getByLabel('External id starts with').fill('vinyl-');
    await page.getByRole('button', { name: 'Search' }).click();
    await expect.poll(() => page.locator('[data-intent-id]').count()).toBe(2);
    expect(await page.getByTestId('intent-totals').textContent()).toContain('2 intents');

    // The CSV of what the filters select (every page).
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    const csv = fs.readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
    expect(csv[0]).toBe('id,createdAt,merchant,externalId,amountUsd,status,paidVia,payer,transactionHash,receivedUsd,refundedUsd,settledAt');
    expect(csv.slice(1).map((line) => line.split(',')[3]).sort()).toEqual(['vinyl-0001', 'vinyl-0002']);
    expect(csv.find((line) => line.includes('vinyl-0001'))).toContain(`,25.00,settled,x402,${payer},${intent.transactionHash},25.00,10.00,`);
    await screenshot(page, 'dashboard-refunds');
    await page.context().close();
  }, 90_000);

  it('creates the intent-events queue from the page, and chooses another from the select', async () => {
    const page = await signedIn(1280);
    await go(page, `#/projects/${projectId}`);
    await page.getByLabel('Queue name').fill('intent-events');
    await page.getByLabel('Key that creates the queue').fill(projectKey);
    await page.getByRole('button', { name: 'Create queue' }).click();
    await expect.poll(async () => (await api('GET', '/v1/projects', owner)).data.find((p: { id: string }) => p.id === projectId).intentEventsQueueId, { timeout: 10_000 }).toBeTruthy();
    const queues = (await api('GET', `/v1/projects/${projectId}/event-queues`, owner)).data;
    expect(queues.map((q: { name: string }) => q.name)).toEqual(['intent-events']);
    await expect.poll(() => page.locator('select[name=intentEventsQueue]').inputValue()).toBe(queues[0].id);

    // A second queue (made with the key this tab now holds) leaves the choice alone; then it is chosen from the select.
    await page.getByLabel('Queue name').fill('intent-events-v2');
    await page.getByRole('button', { name: 'Create queue' }).click();
    await expect.poll(() => page.locator('select[name=intentEventsQueue] option').count(), { timeout: 10_000 }).toBe(3);
    const second = (await api('GET', `/v1/projects/${projectId}/event-queues`, owner)).data.find((q: { name: string }) => q.name === 'intent-events-v2');
    expect((await api('GET', '/v1/projects', owner)).data.find((p: { id: string }) => p.id === projectId).intentEventsQueueId).toBe(queues[0].id);
    await page.locator('select[name=intentEventsQueue]').selectOption({ label: 'intent-events-v2' });
    await expect.poll(async () => (await api('GET', '/v1/projects', owner)).data.find((p: { id: string }) => p.id === projectId).intentEventsQueueId, { timeout: 10_000 }).toBe(second.id);
    // The API can answer before the page has rendered its notice of the same change.
    await expect.poll(() => page.getByText('Payment-intent events now go to intent-events-v2.').count(), { timeout: 10_000 }).toBe(1);
    await page.context().close();
  }, 60_000);

  for (const width of [390, 768, 1280]) {
    it(`fits ${width} px with no axe-core violation: projects, a project, wallets, the explorer`, async () => {
      const page = await signedIn(width);
      const found: Record<string, string[]> = {};
      const routes: [string, string, string?][] = [
        ['#/projects', 'Projects'],
        [`#/projects/${projectId}`, 'Robin’s records', `document.querySelectorAll('[data-intent-id]').length === 4`],
        ['#/wallets', 'Wallets'],
        ['#/explorer', 'Payment explorer'],
        [`#/explorer?recipient=${payTo}`, 'Payment explorer', `document.querySelector('tbody tr .badge')?.textContent === 'verified'`],
      ];
      for (const [hash, h1, ready] of routes) {
        await go(page, hash);
        await expect.poll(() => page.locator('h1').first().textContent(), { timeout: 10_000 }).toBe(h1);
        if (ready) await expect.poll(() => page.evaluate(ready), { timeout: 15_000 }).toBe(true);
        await page.evaluate(`document.querySelectorAll('details').forEach((d) => (d.open = true))`);
        const scrollWidth = (await page.evaluate('document.scrollingElement.scrollWidth')) as number;
        expect({ hash, fits: scrollWidth <= width }).toEqual({ hash, fits: true });
        found[hash] = await axeViolations(page);
      }
      if (width === 768) await screenshot(page, 'dashboard-tablet');
      expect(Object.entries(found).filter(([, v]) => v.length > 0)).toEqual([]);
      await page.context().close();
    }, 90_000);
  }
});
