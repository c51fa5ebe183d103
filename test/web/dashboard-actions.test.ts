// What a user does from the dashboard, in a real browser (Debian's Chromium), each outcome read back from the
// API: create a payment intent on a project page with the project's API key this tab was shown (a wrong key
// and a bad return link refused in the server's words), copy its pay URL, watch its expiry turn "Expired …
// ago" live; rename a merchant (a taken name refused: 409), disable and enable it; route the project's intent
// events to a queue; see each wallet's USDG balance as the chain has it; launch an agent with credits, give it
// a model provider's key and chat with it (the local runtime, the providers' stand-in); sign-out forgets the key.
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { startProviderStandIn } from '../agents/provider-stand-in.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildPayApp } from '../intents/harness.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

const keys = { openai: 'sk-openai-dashboard-0123456789', anthropic: 'sk-ant-dashboard-abcdefghij', openrouter: 'sk-or-dashboard-9876543210' };
/** Intents live this long here, so the page can be seen saying one expired. */
const LIFETIME_SECONDS = 12;

let standIn: Awaited<ReturnType<typeof startProviderStandIn>>;
let app: TestApp;
let browser: TestBrowser;
let context: BrowserContext;
let page: Page;
let owner = '';
let projectId = '';
let projectKey = '';
let intentId = '';

/** A JSON answer, untyped: its shape is the API's, checked by that API's own tests. */
const api = async (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
};
const project = async () => (await api('GET', '/v1/projects', owner)).body.data.find((p: { id: string }) => p.id === projectId);
const merchantNamed = async (name: string) => (await project()).merchants.find((m: { name: string }) => m.name === name);
const go = (hash: string) => page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
const soon = { timeout: 10_000 };

beforeAll(async () => {
  if (browserMissing) return;
  standIn = await startProviderStandIn({ keys });
  app = await buildPayApp({ env: { ...standIn.env, INTENT_LIFETIME_SECONDS: String(LIFETIME_SECONDS) } });
  owner = await app.identityToken('quinn');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
  page = await context.newPage();
  page.on('dialog', (dialog) => void dialog.accept());
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await standIn?.close();
});

describe.skipIf(browserMissing)('acting from the dashboard', () => {
  it('creates an intent with the project key this tab was shown, and copies its pay URL', async () => {
    await page.goto(`${app.urls.api}/app/`);
    await page.getByLabel('User name').fill('quinn');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');
    await page.getByLabel('Project name').fill('Quinn shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    projectKey = (await page.getByTestId('secret').textContent(soon))!;
    await page.getByRole('link', { name: 'Open Quinn shop' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Quinn shop');
    projectId = page.url().split('/').at(-1)!;
    await page.getByLabel('Merchant name').fill('Front desk');
    await page.getByLabel('Pay to (EVM address)').fill(privateKeyToAccount(generatePrivateKey()).address);
    await page.getByRole('button', { name: 'Create merchant' }).click();
    await expect.poll(() => page.getByLabel('Merchant to pay').locator('option').allTextContents()).toEqual(['Front desk']);

    // The key field left empty: the key shown at the project's creation, kept by this tab, is used.
    await page.getByLabel('Amount (USD)').fill('12.50');
    await page.getByLabel('Order reference').fill('order-42');
    await page.getByRole('button', { name: 'Create intent' }).click();
    const payUrl = (await page.getByTestId('pay-url').textContent(soon))!;
    expect(payUrl).toMatch(new RegExp(`^${app.urls.api}/v1/payment-intents/[0-9a-f-]{36}/pay$`));
    intentId = payUrl.split('/').at(-2)!;
    const made = (await api('GET', `/v1/payment-intents/${intentId}`, projectKey)).body;
    expect(made).toMatchObject({ id: intentId, amountUsdCents: 1250, externalId: 'order-42', status: 'pending', paymentUrl: payUrl, merchantId: (await merchantNamed('Front desk')).id });
    await expect.poll(() => page.locator(`tr[data-intent-id="${intentId}"]`).count()).toBe(1);

    const copy = page.getByRole('button', { name: 'Copy the pay URL', exact: true });
    await copy.click();
    await expect.poll(() => copy.textContent()).toBe('Copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(payUrl);
    // The key was used, never written into the page.
    expect(await page.content()).not.toContain(projectKey);
  });

  it('says an intent’s expiry live: "Expires in …" turns into "Expired … ago" in place, without a reload', async () => {
    const said = page.locator('[role=status] time');
    expect(await said.textContent()).toMatch(/^Expires in \d+ s$/);
    await page.evaluate(`window.__sameDocument = true; window.__shown = document.querySelector('[role=status] time')`);
    await expect.poll(() => said.textContent(), { timeout: (LIFETIME_SECONDS + 5) * 1000 }).toMatch(/^Expired \d+ s ago$/);
    expect(await page.evaluate(`window.__sameDocument === true && window.__shown === document.querySelector('[role=status] time')`)).toBe(true);
    expect(await page.locator(`tr[data-intent-id="${intentId}"] time`).textContent()).toMatch(/^Expired \d+ s ago$/);
  }, 30_000);

  it('refuses a wrong API key and a bad return link in the server’s words, and still has the key that works', async () => {
    await page.getByLabel('Project API key').fill('svc_api_notarealkey0000000000000000');
    await page.getByLabel('Amount (USD)').fill('3');
    await page.getByLabel('Order reference').fill('order-43');
    await page.getByRole('button', { name: 'Create intent' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/credential|unauthori[sz]ed|key/i);
    const listed = async () => (await api('GET', `/v1/projects/${projectId}/payment-intents`, owner)).body.data.map((i: { externalId: string }) => i.externalId);
    expect(await listed()).toEqual(['order-42']);
    await page.getByLabel('Project API key').fill('');
    // A return link the API refuses (http to a public host) is said in its words too.
    await page.getByLabel('Return URL (optional)').fill('http://shop.example/thanks');
    await page.getByRole('button', { name: 'Create intent' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('https');
    await page.getByLabel('Return URL (optional)').fill('https://shop.example/thanks');
    await page.getByRole('button', { name: 'Create intent' }).click();
    await expect.poll(listed, soon).toEqual(['order-43', 'order-42']);
    expect((await api('GET', `/v1/projects/${projectId}/payment-intents`, owner)).body.data[0]).toMatchObject({ amountUsdCents: 300, returnUrl: 'https://shop.example/thanks' });
  });

  it('renames a merchant, refuses a name another merchant has (409), disables and enables it', async () => {
    expect((await api('POST', `/v1/projects/${projectId}/merchants`, owner, { name: 'Back office', payTo: privateKeyToAccount(generatePrivateKey()).address })).status).toBe(201);
    await page.reload();
    await page.getByRole('button', { name: 'Rename merchant Front desk' }).click();
    await page.getByLabel('New name of Front desk').fill('Counter');
    await page.getByRole('button', { name: 'Save' }).click();
    const merchantNames = () => page.locator('tr[data-merchant-id] td:first-child').allTextContents();
    await expect.poll(merchantNames).toEqual(['Back office', 'Counter']);
    const counter = await merchantNamed('Counter');
    expect(counter).toMatchObject({ name: 'Counter', enabled: true });

    await page.getByRole('button', { name: 'Rename merchant Counter' }).click();
    await page.getByLabel('New name of Counter').fill('Back office');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('already exists');
    expect((await project()).merchants.map((m: { name: string }) => m.name).sort()).toEqual(['Back office', 'Counter']);
    await page.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Disable merchant Counter' }).click();
    const row = page.locator(`tr[data-merchant-id="${counter.id}"]`);
    await expect.poll(() => row.locator('.badge').textContent()).toBe('disabled');
    expect((await merchantNamed('Counter')).enabled).toBe(false);
    // A disabled merchant is not offered for new intents.
    expect(await page.getByLabel('Merchant to pay').locator('option').allTextContents()).toEqual(['Back office']);
    await page.getByRole('button', { name: 'Enable merchant Counter' }).click();
    await expect.poll(() => row.locator('.badge').textContent()).toBe('enabled');
    expect((await merchantNamed('Counter')).enabled).toBe(true);
  });

  it('routes the project’s payment-intent events to the queue chosen', async () => {
    const queue = (await api('POST', '/v1/event-queues', projectKey, { name: 'intent-events' })).body.data;
    await page.reload();
    await page.getByLabel('Payment-intent events go to').selectOption({ label: 'intent-events' });
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'events now go to' }).count()).toBe(1);
    expect((await project()).intentEventsQueueId).toBe(queue.id);
    await page.getByLabel('Payment-intent events go to').selectOption({ label: 'None' });
    await expect.poll(async () => (await project()).intentEventsQueueId, soon).toBeNull();
  });

  it('shows each wallet’s USDG balance as the chain has it', async () => {
    const mgmt = await app.mgmtSecret('dashboard-balance');
    const funded = (await api('POST', '/v1/wallets', mgmt, { externalId: 'funded', name: 'Funded wallet' })).body.data.wallet;
    const empty = (await api('POST', '/v1/wallets', mgmt, { externalId: 'empty', name: 'Empty wallet' })).body.data.wallet;
    await app.ctx.chain.devchain!.fund(funded.address, '3.25');
    await go('#/wallets');
    await page.getByLabel('Management credential', { exact: true }).fill(mgmt);
    await page.getByRole('button', { name: 'Show wallets' }).click();
    const balance = (id: string) => page.locator(`tr[data-wallet-id="${id}"] [data-balance]`);
    await expect.poll(() => balance(funded.id).textContent(), soon).toBe('3.25 USDG');
    // Each row reads its balance on its own: the empty wallet's may answer after the funded one's.
    await expect.poll(() => balance(empty.id).textContent(), soon).toBe('0.00 USDG');
    // Read from the chain each time the list shows, not remembered.
    await app.ctx.chain.devchain!.fund(funded.address, '1');
    await page.getByRole('button', { name: 'Show wallets' }).click();
    await expect.poll(() => balance(funded.id).textContent(), soon).toBe('4.25 USDG');
  });

  it('launches an agent with credits, gives it a provider key and chats with it', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'quinn', cents: 1000, note: 'test' });
    await go('#/agents');
    await expect.poll(() => page.locator('.balance').textContent()).toBe('$10.00');
    await page.getByLabel('Agent name').fill('Helper');
    await page.getByRole('button', { name: /^Launch for/ }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Launched Helper' }).count(), soon).toBe(1);
    const agents = (await api('GET', '/agents', owner)).body.data;
    expect(agents).toMatchObject([{ name: 'Helper', type: 'runtime_a' }]);
    const panel: Locator = page.locator(`details.agent[data-agent-id="${agents[0].id}"]`);
    // The page follows the deployment until the runtime runs (the local provider, on this machine).
    await expect.poll(() => panel.locator('summary .badge').textContent(), { timeout: 60_000 }).toBe('running');
    expect(await page.locator('.balance').textContent()).toBe('$0.00');

    await panel.getByLabel('Provider API key').fill(keys.openai);
    await panel.getByRole('button', { name: 'Save key' }).click();
    await expect.poll(() => panel.locator('li').first().textContent(), soon).toBe('openai: sk-o…6789');
    await panel.getByLabel('Message', { exact: true }).fill('hello there');
    await panel.getByRole('button', { name: 'Send' }).click();
    const log = panel.locator('ol.chat li');
    await expect.poll(() => log.allTextContents(), { timeout: 30_000 }).toEqual(['Youhello there', 'Helperopenai says: hello there']);
    const sent = standIn.received.at(-1)!;
    expect(sent.headers.authorization).toBe(`Bearer ${keys.openai}`);
    expect(sent.body.messages.at(-1)).toEqual({ role: 'user', content: 'hello there' });

    // The session is the service's: shown again after a reload.
    await page.reload();
    await expect.poll(() => page.locator(`details.agent[data-agent-id="${agents[0].id}"] ol.chat li`).allTextContents(), soon).toEqual(['Youhello there', 'Helperopenai says: hello there']);
    // No credits left: a second launch is refused in the server's words, and nothing is created.
    await page.getByLabel('Agent name').fill('Another');
    await page.getByRole('button', { name: /^Launch for/ }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/balance|credits/i);
    expect((await api('GET', '/agents', owner)).body.data).toHaveLength(1);
  }, 120_000);

  it('keeps a key typed once for the tab, and forgets it on sign-out: the next sign-in must give one again', async () => {
    const required = () => page.evaluate(`document.querySelector('input[name=projectApiKey]').required`);
    const count = async () => (await api('GET', `/v1/projects/${projectId}/payment-intents`, owner)).body.data.length;
    await go(`#/projects/${projectId}`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Quinn shop');
    // The reloads above forgot the key this tab was shown (memory only): type it once, and it is kept.
    expect(await required()).toBe(true);
    await page.getByLabel('Project API key').fill(projectKey);
    await page.getByLabel('Amount (USD)').fill('5');
    await page.getByLabel('Order reference').fill('order-44');
    await page.getByRole('button', { name: 'Create intent' }).click();
    await expect.poll(count, soon).toBe(3);
    // The row is in the database before the page has its answer: wait for the page, not the database.
    await expect.poll(required, soon).toBe(false);
    expect(await page.getByLabel('Project API key').inputValue()).toBe('');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('User name').fill('quinn');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Quinn shop');
    expect(await required()).toBe(true);
    await page.getByLabel('Amount (USD)').fill('6');
    await page.getByLabel('Order reference').fill('order-45');
    await page.getByRole('button', { name: 'Create intent' }).click();
    // The browser's own validation stops it: nothing is sent.
    expect(await page.evaluate(`document.querySelector('input[name=projectApiKey]').validity.valueMissing`)).toBe(true);
    expect(await count()).toBe(3);
  });
});
