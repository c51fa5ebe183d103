// Links that hold (issue 43, item 5), in Chromium. A paid checkout links its payment by the transaction that
// settled it, so the link opens that payment however many newer payments the merchant has; and the explorer's
// newest payments page by cursor (the last row shown), so payments arriving between pages neither repeat a row
// nor hide one. Newer payments are published records put straight into the index, as the transaction API's
// own tests seed them (their signatures are not real: they show as mismatches; the order is the point).
import { getAddress, type Address } from 'viem';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recipientSequences } from '../../src/modules/txapi/tables.js';
import type { TestApp } from '../helpers/test-app.js';
import { createShop, uniqueExternalId, type Shop } from '../intents/fixtures.js';
import { buildPayApp, eventually, fundedPayer, getIntent, signedHeader } from '../intents/harness.js';
import { randomAddress, seedPublished } from '../txapi/seed.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

let app: TestApp;
let shop: Shop;
let browser: TestBrowser;
let chainId: number;
/** Block numbers of seeded records, above the devchain's: each arrival is newer than everything before it. */
let block = 1_000_000;

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp();
  shop = await createShop(app, 'links-merchant');
  chainId = Number(app.ctx.chain.network.split(':')[1]);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

type Row = { attestation: { paymentId: string; recipientSequence: string } };
const api = async (path: string): Promise<Row[]> => (await fetch(`${app.urls.api}${path}`)).json() as Promise<Row[]>;

/** `n` published payments to `recipient`, sequences `from`.., each in a newer block. */
const arrive = (n: number, recipient: Address = randomAddress(), from = 1) =>
  seedPublished(app.ctx.db, Array.from({ length: n }, (_, i) => ({ recipient, sequence: from + i, chainId, blockNumber: ++block })));

describe.skipIf(browserMissing)('links that hold', () => {
  it('a checkout paid before the merchant’s newest 101 payments still links to its own payment', async () => {
    // Eleven earlier payments to the merchant (so its own is not the explorer's first row), then its own.
    const payTo = getAddress(shop.payTo);
    await arrive(11, payTo);
    await app.ctx.db.insert(recipientSequences).values({ chainId, recipient: payTo, lastSequence: 11 });
    const created = await fetch(`${app.urls.api}/v1/payment-intents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${shop.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ merchantId: shop.merchantId, amountUsdCents: 777, externalId: uniqueExternalId() }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const intent = (await created.json()) as { id: string; paymentUrl: string };
    const paid = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, intent.id, await fundedPayer(app, '10')) } });
    expect(paid.status).toBe(200);
    const { transactionHash } = await getIntent(app, shop.apiKey, intent.id);
    // Published as the merchant's twelfth payment; then 101 newer ones arrive.
    const [own] = await eventually(async () => {
      const found = await api(`/x402scan/transactions?recipient=${payTo}&chain=eip155:${chainId}&afterSequence=11`);
      return found.length === 1 && found;
    });
    expect(own!.attestation.recipientSequence).toBe('12');
    await arrive(101, payTo, 13);

    const page = await browser.newPage();
    await page.goto(intent.paymentUrl);
    await expect.poll(() => page.getByTestId('status').textContent()).toBe('settled');
    expect(await page.getByTestId('transaction').getAttribute('title')).toBe(transactionHash);
    await page.getByTestId('transaction').click();
    await page.waitForURL(/\/app\/#\/explorer/);
    const rows = page.locator('tbody tr');
    // The payment itself, its real attestation verified in the page: the only row.
    await expect.poll(() => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-payment-id'))), { timeout: 15_000 }).toEqual([own!.attestation.paymentId]);
    expect(await rows.locator('.badge').textContent()).toBe('verified');
    expect(await rows.textContent()).toContain('7.77 USDG');
    await page.close();
  });

  it('pages the newest payments by cursor while payments arrive: no row twice, none skipped', async () => {
    await arrive(30);
    // What the explorer's newest view lists now, newest first (its chain, its order).
    const before = (await api(`/x402scan/transactions?chain=eip155:${chainId}&pageSize=40`)).map((r) => r.attestation.paymentId);
    const page: Page = await browser.newPage();
    const shown = () => page.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-payment-id')!));
    await page.goto(`${app.urls.api}/app/#/explorer`);
    await expect.poll(shown).toHaveLength(10);

    const seen: string[] = [...(await shown())];
    for (let i = 0; i < 3; i++) {
      await arrive(4); // new payments at the top of the list while the reader is on this page
      await page.getByRole('button', { name: 'Older' }).click();
      await expect.poll(async () => (await shown())[0] !== seen[seen.length - 10] && (await shown()).length === 10).toBe(true);
      seen.push(...(await shown()));
    }
    expect(seen.filter((id, i) => seen.indexOf(id) !== i)).toEqual([]);
    expect(seen).toEqual(before);

    // Back to the newest: the arrivals are there now.
    await page.getByRole('button', { name: 'Newest' }).click();
    // (While the page loads its rows are gone: wait for a first row, then it must be an arrival.)
    await expect.poll(async () => (await shown())[0] ?? null).not.toBeNull();
    await expect.poll(async () => before.includes((await shown())[0]!)).toBe(false);
    await page.close();
  });
});
