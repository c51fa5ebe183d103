// The dashboard and the payment explorer in a real browser (Debian's Chromium): sign in with the dev
// issuer, create a project (its key shown once, and it works), create and revoke a key (refused at once),
// create merchants (a bad checksum refused in the server's words), list and filter intents, see queue
// depth, wallets and credits; then find a real settled payment in the explorer with its attestation
// verified in the page, and a tampered one shown as a mismatch.
import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentIntents } from '../../src/modules/intents/tables.js';
import type { TestApp } from '../helpers/test-app.js';
import { uniqueExternalId } from '../intents/fixtures.js';
import { buildPayApp, eventually, fundedPayer, signedHeader } from '../intents/harness.js';
import { randomAddress, seedPublished } from '../txapi/seed.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

let app: TestApp;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp();
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('dialog', (dialog) => void dialog.accept());
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

/** A JSON answer, untyped: its shape is the API's, checked by that API's own tests. */
const body = async (response: Promise<Response>): Promise<any> => (await response).json();
const api = (path: string, token: string, init: RequestInit = {}) =>
  fetch(`${app.urls.api}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });

let projectKey = '';
let projectUrl = '';
let mgmt = '';

describe.skipIf(browserMissing)('dashboard in Chromium', () => {
  it('signs in with the dev issuer and creates a project whose key is shown once and works', async () => {
    await page.goto(`${app.urls.api}/app/`);
    await page.getByLabel('User name').fill('dana');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');
    expect(await page.getByText('Signed in as').textContent()).toContain('dana');

    await page.getByLabel('Project name').fill('Acme shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    projectKey = (await page.getByTestId('secret').textContent({ timeout: 10_000 }))!;
    expect(projectKey).toMatch(/^\w+_/);
    expect((await api('/v1/event-queues', projectKey)).status).toBe(200);

    await page.getByRole('link', { name: 'Open Acme shop' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Acme shop');
    projectUrl = page.url();
    // Shown once: the project page lists keys by prefix, never a secret.
    expect(await page.getByTestId('secret').count()).toBe(0);
    expect(await page.content()).not.toContain(projectKey);
  });

  it('creates a key and revokes it: the revoked key is refused at once', async () => {
    await page.getByLabel('Key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.getByTestId('secret').textContent({ timeout: 10_000 }))!;
    expect((await api('/v1/event-queues', secret)).status).toBe(200);
    await page.getByRole('button', { name: 'Revoke key ci' }).click();
    await expect.poll(() => page.getByRole('row', { name: /^ci / }).textContent()).toContain('revoked');
    expect((await api('/v1/event-queues', secret)).status).toBe(401);
    expect((await api('/v1/event-queues', projectKey)).status).toBe(200);
  });

  it('creates merchants, refusing a bad checksum in the server’s words', async () => {
    const address = privateKeyToAccount(generatePrivateKey()).address;
    const wrongCase = address.slice(0, 2) + [...address.slice(2)].map((c) => (/[a-f]/.test(c) ? c.toUpperCase() : /[A-F]/.test(c) ? c.toLowerCase() : c)).join('');
    await page.getByLabel('Merchant name').fill('Acme store');
    await page.getByLabel('Pay to (EVM address)').fill(wrongCase);
    await page.getByRole('button', { name: 'Create merchant' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('checksum');
    await page.getByLabel('Pay to (EVM address)').fill(address);
    await page.getByRole('button', { name: 'Create merchant' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'Acme store', exact: true }).count()).toBe(1);
  });

  it('lists the project’s intents with status filters, and queue depth', async () => {
    const projects = (await body(api('/v1/projects', await app.identityToken('dana')))).data;
    const merchantId = projects[0].merchants[0].id;
    const made: Record<number, { id: string }> = {};
    for (const cents of [250, 990]) {
      const response = await api('/v1/payment-intents', projectKey, { method: 'POST', body: JSON.stringify({ merchantId, amountUsdCents: cents, externalId: uniqueExternalId() }) });
      expect(response.status).toBe(201);
      made[cents] = (await response.json()) as { id: string };
    }
    const queue = await body(api('/v1/event-queues', projectKey, { method: 'POST', body: JSON.stringify({ name: 'orders' }) }));
    for (let i = 0; i < 3; i++) expect((await api(`/v1/event-queues/${queue.data.id}/events`, projectKey, { method: 'POST', body: JSON.stringify({ payload: { i } }) })).status).toBe(201);

    await page.goto(projectUrl);
    await page.reload();
    await expect.poll(() => page.getByRole('cell', { name: '$9.90' }).count()).toBe(1);
    expect(await page.getByRole('cell', { name: '$2.50' }).count()).toBe(1);
    const queueRow = page.getByRole('row', { name: /^orders/ });
    expect(await queueRow.textContent()).toContain('3');
    // Every field has a label a screen reader reads out.
    // (A string: this runs in the page, where the DOM is.)
    const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select')].filter((el) => !el.labels?.length && !el.getAttribute('aria-label')).map((el) => el.outerHTML)`);
    expect(unlabelled).toEqual([]);

    await page.getByLabel('Status').selectOption('settled');
    await expect.poll(() => page.getByText('No intents match.').count()).toBe(1);
    await page.getByLabel('Status').selectOption('pending');
    await expect.poll(() => page.getByRole('cell', { name: '$9.90' }).count()).toBe(1);

    // A pending intent whose last payment did not go through says what happened (as the intents module records
    // a settle that moved nothing: docs/intents.md, lastPaymentError).
    expect(await page.getByTestId('last-payment-error').count()).toBe(0);
    const message = "the payer's balance does not cover the amount";
    await app.ctx.db
      .update(paymentIntents)
      .set({ lastPaymentErrorCode: 'invalid_exact_evm_insufficient_balance', lastPaymentErrorMessage: message, lastPaymentErrorAt: new Date() })
      .where(eq(paymentIntents.id, made[990]!.id));
    await page.reload();
    await expect.poll(() => page.locator(`[data-intent-id="${made[990]!.id}"]`).getByTestId('last-payment-error').textContent()).toContain(`Last payment not settled`);
    expect(await page.getByTestId('last-payment-error').textContent()).toContain(message);
    expect(await page.getByTestId('last-payment-error').count()).toBe(1);
  });

  it('shows credits and agents, and wallets for a management credential', async () => {
    await page.getByRole('link', { name: 'Agents and credits' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Agents and credits');
    expect(await page.locator('.balance').textContent()).toBe('$0.00');

    mgmt = await app.mgmtSecret('dashboard');
    expect((await api('/v1/wallets', mgmt, { method: 'POST', body: JSON.stringify({ externalId: 'bot-1', name: 'Trading bot' }) })).status).toBe(201);
    await page.getByRole('link', { name: 'Wallets' }).click();
    await page.getByLabel('Management credential', { exact: true }).fill(mgmt);
    await page.getByRole('button', { name: 'Show wallets' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'Trading bot' }).count()).toBe(1);
  });

  it('forgets the management credential on sign-out: the next user of the tab sees none of its wallets', async () => {
    // The page's own loads for the wallet it shows (its balance, its policy panel) finish first: requests sent
    // before the sign-out are not the question (counting them made this test fail when they ran late).
    await expect.poll(() => page.locator('[data-balance="loading"]').count()).toBe(0);
    await expect.poll(() => page.getByText('Loading…').count()).toBe(0);
    const sent: string[] = [];
    page.on('request', (request) => void (request.headers().authorization === `Bearer ${mgmt}` && sent.push(request.url())));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('User name').fill('erin');
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back on #/wallets as erin; the route has rendered once focus moves to the content.
    await expect.poll(() => page.evaluate('document.activeElement?.id')).toBe('content');
    expect(await page.getByText('Signed in as').textContent()).toContain('erin');
    expect(await page.locator('h1').textContent()).toBe('Wallets');
    expect(await page.getByRole('cell', { name: 'Trading bot' }).count()).toBe(0);
    expect(await page.getByLabel('Management credential', { exact: true }).inputValue()).toBe('');
    expect(sent).toEqual([]);
  });
});

describe.skipIf(browserMissing)('payment explorer in Chromium', () => {
  /** The recipient of the real settled payment the first test makes. */
  let payTo = '';

  it('finds a settled payment by recipient and verifies its attestation in the page; a tampered one is a mismatch', async () => {
    // A real payment: an intent paid with an x402 signature, settled on the devchain and indexed.
    const owner = await app.identityToken('explorer-owner');
    const project = (await body(api('/v1/projects', owner, { method: 'POST', body: JSON.stringify({ name: 'explorer' }) }))).data;
    payTo = privateKeyToAccount(generatePrivateKey()).address;
    const merchant = (await body(api(`/v1/projects/${project.project.id}/merchants`, owner, { method: 'POST', body: JSON.stringify({ name: 'explorer store', payTo }) }))).data;
    const intent = await body(api('/v1/payment-intents', project.apiKey.secret, { method: 'POST', body: JSON.stringify({ merchantId: merchant.id, amountUsdCents: 321, externalId: uniqueExternalId() }) }));
    const payer = await fundedPayer(app, '10');
    const paid = await fetch(intent.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, intent.id, payer) } });
    expect(paid.status).toBe(200);
    await eventually(async () => ((await (await fetch(`${app.urls.api}/x402scan/transactions?recipient=${payTo}`)).json()) as unknown[]).length === 1);

    const explorer = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await explorer.goto(`${app.urls.api}/app/#/explorer`);
    await explorer.getByLabel('Recipient address').fill(payTo);
    await explorer.getByRole('button', { name: 'Search' }).click();
    const row = explorer.locator('tbody tr');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain('3.21 USDG');
    expect(await row.locator('.badge').textContent()).toBe('verified');

    // The same answer with one byte of the amount changed: the signature no longer recovers to the signer.
    await explorer.route('**/x402scan/transactions?*', async (route) => {
      const records = (await (await route.fetch()).json()) as { attestation: { amount: string } }[];
      for (const record of records) record.attestation.amount = String(BigInt(record.attestation.amount) + 1n);
      await route.fulfill({ json: records });
    });
    await explorer.reload();
    await expect.poll(() => explorer.locator('tbody tr .badge').textContent()).toBe('signature mismatch');
    await explorer.close();
  });

  it('does not call a row verified when the record it shows differs from the signed attestation', async () => {
    // The attestation and its signature untouched, the record's own value altered in flight: the signature
    // still recovers to the signer, but the amount the row shows is not the one signed.
    const explorer = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await explorer.route('**/x402scan/transactions?*', async (route) => {
      const records = (await (await route.fetch()).json()) as { value: string }[];
      for (const record of records) record.value = String(BigInt(record.value) + 1n);
      await route.fulfill({ json: records });
    });
    await explorer.goto(`${app.urls.api}/app/#/explorer?recipient=${payTo}`);
    const badge = explorer.locator('tbody tr .badge');
    await expect.poll(() => badge.textContent()).toBe('record differs from attestation');
    expect(await badge.getAttribute('title')).toContain('value');
    // The page says what the signature does not cover.
    expect(await explorer.locator('main').textContent()).toContain('transaction hash');
    await explorer.close();
  });

  it('pages a recipient’s payments by cursor: Next payments shows the ones after the page’s last sequence', async () => {
    // Eleven published records straight into the index (as the transaction API's own tests seed them): one
    // more than a page. Their signatures are not real, so they show as mismatches; the order is the point.
    const recipient = randomAddress();
    await seedPublished(app.ctx.db, Array.from({ length: 11 }, (_, i) => ({ recipient, sequence: i + 1 })));
    const explorer = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const sequences = () => explorer.locator('tbody tr td:first-child').allTextContents();
    const firstPage = Array.from({ length: 10 }, (_, i) => String(i + 1));

    await explorer.goto(`${app.urls.api}/app/#/explorer?recipient=${recipient}`);
    await expect.poll(sequences).toEqual(firstPage);
    await explorer.getByRole('button', { name: 'Next payments' }).click();
    await expect.poll(sequences).toEqual(['11']);
    expect(new URL(explorer.url()).hash).toContain('after=10');
    expect(await explorer.getByRole('button', { name: 'Next payments' }).count()).toBe(0);
    await explorer.getByRole('button', { name: 'From the first' }).click();
    await expect.poll(sequences).toEqual(firstPage);
    await explorer.close();
  });
});
