// Every dashboard route in a real browser (Debian's Chromium) at a phone's 390 px, a tablet's 768 px and a desktop's
// 1280 px, over realistic data (a settled payment, long order references, wallets with a policy, an agent, a trading
// runtime, a connected application and one asking to connect): nothing scrolls the page sideways
// (`document.scrollingElement.scrollWidth` ≤ the viewport) and no element reaches past the right edge (so nothing is
// clipped instead), tables stacked into rows below 1024 px; axe-core finds no violation on any route (issue 45: every
// disclosure opened first, so what it hides is checked too). Also: every `pattern` on every page compiles as the
// browser compiles it (the `v` flag), and the console names none invalid.
// Screenshots of the main pages at 390 and 1280 px (UPDATE_SCREENSHOTS=1 writes docs/screenshots).
import type { Page } from 'playwright-core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildPayApp, eventually, fundedPayer, signedHeader } from '../intents/harness.js';
import { connect, pkce, register } from '../oauth/helpers.js';
import { axeViolations } from './axe.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

let app: TestApp;
let browser: TestBrowser;
let projectId = '';
let payTo = '';
/** The paid intent's transaction: the explorer's one-transaction view, as the intents list and the checkout link it. */
let paidTransaction = '';
let mgmt = '';
/** An application's authorization request, as GET /oauth/authorize hands it to the dashboard's consent route. */
let authorizeQuery = '';

/** A JSON answer, untyped: its shape is the API's, checked by that API's own tests. */
const api = async (method: string, path: string, token: string, body?: unknown): Promise<any> => {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${JSON.stringify(answer)}`);
  return answer;
};

beforeAll(async () => {
  if (browserMissing) return;
  app = await buildPayApp();
  const owner = await app.identityToken('pat');
  const made = (await api('POST', '/v1/projects', owner, { name: 'Pat’s hardware store with a rather long project name' })).data;
  projectId = made.project.id;
  const key = made.apiKey.secret;
  payTo = privateKeyToAccount(generatePrivateKey()).address;
  const merchant = (await api('POST', `/v1/projects/${projectId}/merchants`, owner, { name: 'Main street store', payTo })).data;
  await api('POST', `/v1/projects/${projectId}/merchants`, owner, { name: 'Online shop', payTo: privateKeyToAccount(generatePrivateKey()).address });
  // One intent paid for real (a settled row with its transaction, and a verified payment in the explorer).
  const paid = await api('POST', '/v1/payment-intents', key, { merchantId: merchant.id, amountUsdCents: 1234, externalId: 'order-2026-000001' });
  const payer = await fundedPayer(app, '20');
  expect((await fetch(paid.paymentUrl, { method: 'POST', headers: { 'payment-signature': await signedHeader(app, paid.id, payer) } })).status).toBe(200);
  paidTransaction = (await api('GET', `/v1/payment-intents/${paid.id}`, key)).transactionHash;
  for (const [cents, externalId] of [[990, 'order-2026-000002'], [125_000, 'subscription-renewal-for-customer-0f8e2a4b-7c1d-4e5f-9a3b-2c6d8e0f1a2b']] as const) {
    await api('POST', '/v1/payment-intents', key, { merchantId: merchant.id, amountUsdCents: cents, externalId });
  }
  const queue = (await api('POST', '/v1/event-queues', key, { name: 'orders' })).data;
  await api('POST', `/v1/event-queues/${queue.id}/events`, key, { payload: { order: 1 } });

  mgmt = await app.mgmtSecret('phone');
  const wallet = (await api('POST', '/v1/wallets', mgmt, { externalId: 'trading-bot-1', name: 'Trading bot' })).data.wallet;
  await app.ctx.chain.devchain!.fund(wallet.address, '2.5');
  const usdg = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address };
  await api('PUT', `/v1/wallets/${wallet.id}/policy`, mgmt, { limits: [{ window: '24h', ...usdg, amount: '1000000' }], allowHosts: ['api.example.com', '*.data-provider.example.org'], approvalAbove: { ...usdg, amount: '500000' } });
  await api('POST', '/v1/wallets', mgmt, { externalId: 'research-agent', name: 'Research agent' });
  // Connected apps lists one grant; the consent page shows another application's request.
  await connect(app, { user: 'pat', mgmt, walletId: wallet.id, ceiling: '5000000', name: 'Claude (desktop app on a long-named laptop)' });
  const redirectUri = 'http://127.0.0.1:53682/callback';
  const asking = await register(app, { redirect_uris: [redirectUri], client_name: 'Research notebook', token_endpoint_auth_method: 'none' });
  expect(asking.status).toBe(201);
  authorizeQuery = new URLSearchParams({ response_type: 'code', client_id: asking.body.client_id, redirect_uri: redirectUri, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'phone', resource: `${app.urls.api}/mcp`, scope: 'wallet' }).toString();

  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'pat', cents: 2500, note: 'test' });
  await api('POST', '/agents', owner, { name: 'Support assistant', type: 'runtime_a' });
  const strategy = (await api('POST', '/agentic-trading/strategies', owner, { name: 'BTC trend', version: { kind: 'quant_signal', schemaVersion: 1, definition: { instructions: 'Trend follow. fast=5 slow=20', universe: ['BTC-USD'], dataSources: ['embedded'], candleInterval: '1m' } } })).data;
  const account = (await api('POST', '/agentic-trading/accounts/agent-wallets', owner, { name: 'main' })).data;
  await api('POST', '/agentic-trading/runtimes', owner, { strategyVersionId: strategy.latestVersion.id, accountId: account.id, name: 'BTC trend, hourly with a long name', cronExpression: '0 * * * *', fundLimitUsd: 10_000, maxLeverage: 2, maxDrawdownPercent: 20, idempotencyKey: 'phone' });
  await eventually(async () => ((await (await fetch(`${app.urls.api}/x402scan/transactions?recipient=${payTo}`)).json()) as unknown[]).length === 1);

  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

interface Route {
  hash: string;
  h1: string;
  /** Name of its screenshot (phone: with -phone), for the main pages only. */
  shot?: string;
  /** Done when this is true in the page (every asynchronous part shown). */
  ready?: string;
  /** What the user does on the page before `ready` can hold. */
  act?: (page: Page) => Promise<void>;
}

const routes = (): Route[] => [
  { hash: '#/projects', h1: 'Projects' },
  { hash: `#/projects/${projectId}`, h1: 'Pat’s hardware store with a rather long project name', shot: 'dashboard', ready: `document.querySelectorAll('[data-intent-id]').length === 3` },
  { hash: '#/wallets', h1: 'Wallets', shot: 'wallets', ready: `document.querySelectorAll('[data-balance]').length === 2 && !document.querySelector('[data-balance=loading]') && !document.querySelector('main').textContent.includes('Loading…')` },
  { hash: '#/agents', h1: 'Agents and credits', shot: 'agents', ready: `!document.querySelector('main').textContent.includes('Loading…')` },
  { hash: '#/trading', h1: 'Trading', shot: 'trading', ready: `document.querySelectorAll('tr[data-runtime-id]').length === 1 && !document.querySelector('main').textContent.includes('Loading…')` },
  { hash: '#/connected-apps', h1: 'Connected apps', ready: `document.querySelectorAll('tr[data-grant-id]').length === 1` },
  { hash: `#/authorize?${authorizeQuery}`, h1: 'Connect an application', ready: `document.querySelectorAll('input[name=walletId]').length === 2`, act: async (page) => {
    await page.getByLabel('Management credential', { exact: true }).fill(mgmt);
    await page.getByRole('button', { name: 'Show wallets' }).click();
  } },
  { hash: '#/explorer', h1: 'Payment explorer', ready: `document.querySelectorAll('tbody tr').length === 1` },
  { hash: `#/explorer?recipient=${payTo}`, h1: 'Payment explorer', shot: 'explorer', ready: `document.querySelector('tbody tr .badge')?.textContent === 'verified'` },
  { hash: `#/explorer?${new URLSearchParams({ transaction: paidTransaction, recipient: payTo })}`, h1: 'Payment explorer', ready: `document.querySelector('tbody tr .badge')?.textContent === 'verified'` },
];

/** Elements (outside the visually hidden table heads) whose right edge is past the viewport's. */
const PAST_THE_EDGE = `[...document.querySelectorAll('body *')]
  .filter((el) => !el.closest('thead') && el.getClientRects().length > 0 && el.getBoundingClientRect().right > innerWidth + 0.5)
  .map((el) => el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' right=' + Math.round(el.getBoundingClientRect().right))`;

/** Every pattern attribute compiled as the browser does (anchored, `v` flag): the invalid ones. */
const INVALID_PATTERNS = `[...document.querySelectorAll('[pattern]')].filter((el) => { try { new RegExp('^(?:' + el.getAttribute('pattern') + ')$', 'v'); return false; } catch { return true; } }).map((el) => el.getAttribute('pattern'))`;

/** Moves the dashboard to a route, as a link would (a hash change; no reload). */
const go = (page: Page, hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);

async function measure(page: Page, width: number) {
  return {
    scrollWidth: (await page.evaluate('document.scrollingElement.scrollWidth')) as number,
    pastTheEdge: (await page.evaluate(PAST_THE_EDGE)) as string[],
    invalidPatterns: (await page.evaluate(INVALID_PATTERNS)) as string[],
    width,
  };
}

describe.skipIf(browserMissing)('every dashboard page at 390, 768 and 1280 px', () => {
  for (const [width, height, suffix] of [[390, 844, '-phone'], [768, 1024, null], [1280, 900, '']] as const) {
    it(`fits ${width} px with no axe-core violation: sign-in and every route, no sideways scroll, nothing past the edge`, async () => {
      const context = await browser.newContext({ viewport: { width, height }, bypassCSP: true });
      const page = await context.newPage();
      const logged: string[] = [];
      page.on('console', (message) => void logged.push(message.text()));
      page.on('pageerror', (error) => void logged.push(error.message));

      await page.goto(`${app.urls.api}/app/`);
      await expect.poll(() => page.locator('h1').textContent()).toBe('Sign in');
      const signIn = await measure(page, width);
      expect(signIn.invalidPatterns).toEqual([]);
      expect(await page.locator('[pattern]').count()).toBeGreaterThan(0); // the user-name field has one
      expect(signIn.pastTheEdge).toEqual([]);
      expect(signIn.scrollWidth).toBeLessThanOrEqual(width);
      const violations: Record<string, string[]> = { 'sign-in': await axeViolations(page) };
      await page.getByLabel('User name').fill('pat');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');

      // The wallets page needs the management credential once; the tab keeps it for the later visits.
      await go(page, '#/wallets');
      await page.getByLabel('Management credential', { exact: true }).fill(mgmt);
      await page.getByRole('button', { name: 'Show wallets' }).click();
      await expect.poll(() => page.locator('tr[data-wallet-id]').count()).toBe(2);

      for (const route of routes()) {
        await go(page, route.hash);
        await expect.poll(() => page.locator('h1').first().textContent(), { timeout: 10_000 }).toBe(route.h1);
        await route.act?.(page);
        if (route.ready) await expect.poll(() => page.evaluate(route.ready!), { timeout: 15_000 }).toBe(true);
        const seen = await measure(page, width);
        expect({ route: route.hash, scrollWidth: seen.scrollWidth <= width, pastTheEdge: seen.pastTheEdge, invalidPatterns: seen.invalidPatterns }).toEqual({ route: route.hash, scrollWidth: true, pastTheEdge: [], invalidPatterns: [] });
        // Below 1024 px the tables are stacked rows (a cell is a block under its column's name); on a desktop, tables.
        const cellDisplay = await page.evaluate(`getComputedStyle(document.querySelector('main td') ?? document.body).display`);
        if (await page.locator('main td').count()) expect(cellDisplay, route.hash).toBe(width < 1024 ? 'block' : 'table-cell');
        if (route.shot && suffix !== null) await screenshot(page, `${route.shot}${suffix}`);
        // What the disclosures hide is checked too: opened, it must still fit, and pass axe-core.
        await page.evaluate(`document.querySelectorAll('main details').forEach((d) => (d.open = true))`);
        expect({ route: route.hash, opened: ((await page.evaluate('document.scrollingElement.scrollWidth')) as number) <= width }).toEqual({ route: route.hash, opened: true });
        violations[route.hash] = await axeViolations(page);
      }
      expect(Object.entries(violations).filter(([, found]) => found.length > 0)).toEqual([]);
      expect(logged.filter((text) => /not a valid regular expression|Pattern attribute/i.test(text))).toEqual([]);
      await context.close();
    }, 120_000);
  }
});
