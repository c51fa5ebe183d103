// The Wallets page's spend policies in a real browser (Debian's Chromium): a wallet's policy read out, its
// budget, and approvals made the real way (a pay-and-call of the app's own /x402-test/ping above
// approvalAbove answers 202) approved and denied from the page, each decision read back from the API and
// then from the agent's side (an approved one pays once, a denied one pays nothing). Also: a decision the
// server refuses (409) is said, the policy edited as JSON with field errors, and the page at 390 px wide.
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASSETS } from '../../src/chain/registry.js';
import { KNOWN_ASSETS, tokenAmount } from '../../web/src/shared/format.js';
import type { TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../txapi/seed.js';
import { buildWalletsApp, call, createWallet, freePort, settledPayment } from '../wallets/helpers.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

let app: TestApp;
let browser: TestBrowser;
let page: Page;
let mgmt: { id: string; secret: string };
let agent: { id: string; address: `0x${string}`; secret: string };
let ping = '';
let usdg: { network: string; asset: string };
const deniedRecipient = randomAddress();

/** A JSON answer, untyped: its shape is the API's, checked by that API's own tests. */
const api = async (method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
};
/** The agent's pay-and-call of /x402-test/ping (100 atomic USDG), with an approvalId when it has one. */
const payPing = (approvalId?: string) => call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: ping, maxPayment: { ...usdg, amount: '100' }, ...(approvalId ? { approvalId } : {}) });
/** A new pending approval, asked for the way an agent does. */
async function askApproval(): Promise<string> {
  const answer = await payPing();
  expect(answer.status).toBe(202);
  expect(answer.body.data.approval).toMatchObject({ status: 'pending', amount: '100', url: ping });
  return answer.body.data.approval.id;
}
const approvalsOf = async (status: string) => (await api('GET', `/v1/wallets/${agent.id}/approvals?status=${status}`, mgmt.secret)).body.data as any[];
const panel = (name: string): Locator => page.locator('details.wallet').filter({ has: page.getByRole('heading', { name, exact: true }) });
/** Polls wait this long: the first render signs in and loads every panel. */
const soon = { timeout: 10_000 };
const approvalRow = (id: string): Locator => page.locator(`tr[data-approval-id="${id}"]`);

beforeAll(async () => {
  if (browserMissing) return;
  // The API's port is fixed up front so exactly its loopback origin can be allow-listed for http.
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  ping = `${app.urls.api}/x402-test/ping`;
  usdg = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address };
  mgmt = await app.ctx.mgmtCredentials.create('wallet-policy');
  const made = await createWallet(app, mgmt.secret, 'agent-policy', { name: 'Agent one' });
  agent = { id: made.wallet.id, address: made.wallet.address, secret: made.secret };
  await app.ctx.chain.devchain!.fund(agent.address, '1');
  await createWallet(app, mgmt.secret, 'idle', { name: 'Idle wallet' });
  const set = await api('PUT', `/v1/wallets/${agent.id}/policy`, mgmt.secret, {
    limits: [{ window: '24h', ...usdg, amount: '1000000' }],
    maxPerCall: { ...usdg, amount: '500000' },
    allowHosts: ['127.0.0.1', '*.example.com'],
    denyPayTo: [deniedRecipient],
    approvalAbove: { ...usdg, amount: '50' },
    approvalTimeoutSeconds: 600,
  });
  expect(set.status).toBe(200);

  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe('amounts on the page', () => {
  it('names every asset the server accepts with its symbol and decimals (the pages keep their own copy)', () => {
    expect(KNOWN_ASSETS.map((a) => ({ ...a, address: a.address.toLowerCase() }))).toEqual(ASSETS.map((a) => ({ network: a.network, address: a.address.toLowerCase(), symbol: a.symbol, decimals: a.decimals })));
    const [first] = ASSETS;
    expect(tokenAmount('1000000', first!.network, first!.address)).toBe('1.00 USDG');
    expect(tokenAmount('100', first!.network, first!.address)).toBe('0.0001 USDG');
    expect(tokenAmount('1234567', first!.network, first!.address.toLowerCase())).toBe('1.234567 USDG');
    expect(tokenAmount('100', 'eip155:1', first!.address)).toBe(`100 atomic units of 0x5fc5…d168 (eip155:1)`);
  });
});

describe.skipIf(browserMissing)('wallet spend policies in Chromium', () => {
  let approved = '';

  it('shows each wallet’s policy, budget and pending approvals', async () => {
    const pending = await askApproval();
    await page.goto(`${app.urls.api}/app/#/wallets`);
    await page.getByLabel('User name').fill('dana');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Management credential', { exact: true }).fill(mgmt.secret);
    await page.getByRole('button', { name: 'Show wallets' }).click();

    const agentPanel = panel('Agent one');
    await approvalRow(pending).waitFor();
    const policy = await agentPanel.locator('dl.facts').innerText();
    for (const shown of ['24h: 1.00 USDG', '0.50 USDG', '127.0.0.1', '*.example.com', deniedRecipient, '0.00005 USDG', 'within 10 min']) expect(policy).toContain(shown);
    // Allowed recipients: no list, so any.
    expect(await agentPanel.locator('dt:text-is("Recipients allowed") + dd').innerText()).toBe('Any');

    const budget = agentPanel.getByRole('row').filter({ hasText: '24h' });
    expect(await budget.getByRole('cell').allInnerTexts()).toEqual(['24h', '1.00 USDG', '0.00 USDG', '0.00 USDG', '1.00 USDG', '—']);

    const row = await approvalRow(pending).innerText();
    expect(row).toContain('0.0001 USDG');
    expect(row).toContain(`GET ${ping}`);
    expect(row).toContain('Expires in 10 min');
    // Each wallet's USDG balance as the chain has it (GET /v1/wallets/{id}/balance): nothing paid yet.
    await expect.poll(() => page.locator(`tr[data-wallet-id="${agent.id}"] [data-balance]`).textContent(), soon).toBe('1.00 USDG');
    expect(await agentPanel.locator(':scope > summary').innerText()).toContain('1 pending');

    // The other wallet's panel holds none of this one's rules or approvals.
    const idle = panel('Idle wallet');
    expect(await idle.innerText()).toContain('No policy set');
    expect(await idle.innerText()).toContain('Nothing waits for a decision.');
    expect(await idle.getByRole('button', { name: /^Approve/ }).count()).toBe(0);
    await screenshot(page, 'wallet-policy');
    const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, textarea')].filter((el) => !el.labels?.length && !el.getAttribute('aria-label')).map((el) => el.outerHTML)`);
    expect(unlabelled).toEqual([]);
    approved = pending;
  });

  it('approves: the API lists it approved by this credential, and the agent’s repeat pays once', async () => {
    await approvalRow(approved).getByRole('button', { name: /^Approve/ }).click();
    await expect.poll(async () => (await approvalsOf('approved')).map((a) => a.id), soon).toEqual([approved]);
    const [decision] = await approvalsOf('approved');
    expect(decision.decidedBy).toBe(mgmt.id);
    expect(Date.parse(decision.decidedAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(await approvalsOf('pending')).toEqual([]);

    const agentPanel = panel('Agent one');
    await expect.poll(() => agentPanel.getByRole('status').innerText(), soon).toContain(`approvalId ${approved}`);
    await expect.poll(() => agentPanel.innerText(), soon).toContain('Nothing waits for a decision.');
    const row = approvalRow(approved);
    expect(await row.getByRole('cell').nth(0).innerText()).toBe('approved');
    expect(await row.innerText()).toContain(mgmt.id);
    expect(await agentPanel.locator(':scope > summary').innerText()).not.toContain('pending');

    const paid = await payPing(approved);
    expect(paid.status).toBe(200);
    expect(paid.body.data.payment).toMatchObject({ status: 'pending', amount: '100' });
    await settledPayment(app, agent.secret, paid.body.data.payment);
    await agentPanel.getByRole('button', { name: 'Refresh Agent one' }).click();
    await expect.poll(() => row.getByRole('cell').nth(0).innerText(), soon).toBe('consumed');
    expect(await row.innerText()).toContain(paid.body.data.payment.id);
    const budget = await agentPanel.getByRole('row').filter({ hasText: '24h' }).getByRole('cell').allInnerTexts();
    expect(budget.slice(0, 5)).toEqual(['24h', '1.00 USDG', '0.0001 USDG', '0.00 USDG', '0.9999 USDG']);
    expect(budget[5]).toMatch(/\(in (24 h|1 d)\)$/); // a day after the payment, as the database dated it
  });

  it('denies: the API lists it denied by this credential, and the agent’s repeat is refused', async () => {
    const pending = await askApproval();
    expect(pending).not.toBe(approved);
    await panel('Agent one').getByRole('button', { name: 'Refresh Agent one' }).click();
    await approvalRow(pending).getByRole('button', { name: /^Deny/ }).click();
    await expect.poll(async () => (await approvalsOf('denied')).map((a) => a.id), soon).toEqual([pending]);
    expect((await approvalsOf('denied'))[0].decidedBy).toBe(mgmt.id);
    expect((await approvalsOf('approved')).length).toBe(0); // the first one was consumed; none approved since
    await expect.poll(() => approvalRow(pending).getByRole('cell').nth(0).innerText(), soon).toBe('denied');

    const refused = await payPing(pending);
    expect(refused.status).toBe(409);
    expect(refused.body.data.reason).toBe('approval_denied');
  });

  it('says why when the approval was decided elsewhere meanwhile, and changes nothing', async () => {
    const pending = await askApproval();
    await panel('Agent one').getByRole('button', { name: 'Refresh Agent one' }).click();
    await expect.poll(() => approvalRow(pending).count(), soon).toBe(1);
    expect((await api('POST', `/v1/wallets/${agent.id}/approvals/${pending}/deny`, mgmt.secret)).status).toBe(200);
    await approvalRow(pending).getByRole('button', { name: /^Approve/ }).click();
    await expect.poll(() => panel('Agent one').getByRole('alert').innerText(), soon).toContain('The approval is denied; only a pending one can be approved');
    expect((await approvalsOf('denied')).map((a) => a.id)).toContain(pending);
    expect(await approvalsOf('approved')).toEqual([]);
    await expect.poll(() => approvalRow(pending).getByRole('cell').nth(0).innerText(), soon).toBe('denied'); // reloaded: now under decisions
  });

  it('edits the policy as JSON: a bad field is named, a good one applies', async () => {
    const agentPanel = panel('Agent one');
    await agentPanel.getByText('Edit the policy (JSON)').click();
    const text = agentPanel.getByRole('textbox', { name: 'Policy of Agent one' });
    const said = () => agentPanel.getByRole('form', { name: 'Edit the policy of Agent one' }).getByRole('alert').innerText();
    const current = JSON.parse(await text.inputValue());
    expect(current).toMatchObject({ approvalAbove: { ...usdg, amount: '50' }, approvalTimeoutSeconds: 600 });
    expect(current.walletId).toBeUndefined();

    await text.fill('{ limits: ');
    await agentPanel.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(said, soon).toContain('Not JSON');

    await text.fill(JSON.stringify({ ...current, limits: [{ window: '24h', ...usdg, amount: '1.5' }] }));
    await agentPanel.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(said, soon).toContain('/limits/0/amount: amount must be an integer string of atomic units');
    expect((await api('GET', `/v1/wallets/${agent.id}/policy`, mgmt.secret)).body.data.limits[0].amount).toBe('1000000');

    await text.fill(JSON.stringify({ ...current, limits: [{ window: '7d', ...usdg, amount: '2500000' }] }));
    await agentPanel.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(() => agentPanel.locator('dl.facts').innerText(), soon).toContain('7d: 2.50 USDG');
    expect((await api('GET', `/v1/wallets/${agent.id}/policy`, mgmt.secret)).body.data.limits).toEqual([{ window: '7d', ...usdg, amount: '2500000' }]);
    expect(await agentPanel.getByRole('row').filter({ hasText: '7d' }).getByRole('cell').nth(4).innerText()).toBe('2.4999 USDG');
  });

  it('stays usable 390 px wide: no page scroll sideways, the decision buttons on screen', async () => {
    const pending = await askApproval();
    await page.setViewportSize({ width: 390, height: 844 });
    await panel('Agent one').getByRole('button', { name: 'Refresh Agent one' }).click();
    await expect.poll(() => approvalRow(pending).count(), soon).toBe(1);
    expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(390);
    for (const name of [/^Approve/, /^Deny/]) {
      const box = (await approvalRow(pending).getByRole('button', { name }).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
    }
    await screenshot(page, 'wallet-policy-390');
    await approvalRow(pending).getByRole('button', { name: /^Deny/ }).click();
    await expect.poll(async () => (await approvalsOf('denied')).map((a) => a.id), soon).toContain(pending);
  });
});
