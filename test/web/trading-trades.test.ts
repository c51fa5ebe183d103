// The trading page's view of what a runtime did (issue 42, item 7), in a real browser: the prices it read with
// its entries and exits marked, each open position's P&L, its trades after fees, a blocked execution naming the
// limit that blocked it, and the account's kill switch, pressed and read back from the API and the next tick.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from '../trading/harness.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

let h: TradingHarness;
let browser: TestBrowser;
let page: Page;
const soon = { timeout: 10_000 };
const dollars = (n: number) => n.toLocaleString('en-US', { style: 'currency', currency: 'USD' });
const signed = (n: number) => `${n > 0 ? '+' : ''}${dollars(n)}`;

beforeAll(async () => {
  if (browserMissing) return;
  h = await openTradingHarness();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  page.on('dialog', (dialog) => void dialog.accept());
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

describe.skipIf(browserMissing)('the trading page: trades, prices, risk and the kill switch', () => {
  it('marks entries and exits, shows P&L after fees, names the limit that blocked, and halts the account', async () => {
    const { token, runtimeId, account } = await launch(h, 'tara', 'Trend follow. fast=2 slow=5 short=true');
    // A second runtime of hers, on its own account, whose drawdown limit (0.01 %) the first loss passes.
    const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Tight. fast=2 slow=5 short=true'))).body.data;
    const other = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'tight' })).body.data;
    const tight = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, other.id, { name: 'tight', maxDrawdownPercent: 0.01 }))).body.data;
    await h.settle();
    for (let i = 0; i < 25; i++) await h.nextMinute();
    const get = async (path: string) => (await h.call('GET', path, token)).body.data;
    const runtime = await get(`/agentic-trading/runtimes/${runtimeId}`);
    const trades = await get(`/agentic-trading/runtimes/${runtimeId}/trades`);
    expect(trades.filter((t: any) => t.status === 'closed').length).toBeGreaterThan(1);
    const blocked = (await get(`/agentic-trading/runtimes/${tight.id}/executions?limit=100`)).find((e: any) => e.status === 'blocked');
    expect(blocked.riskAssessment.breaches).toContain('drawdown');

    await page.goto(`${h.app.urls.api}/app/#/trading`);
    await page.getByLabel('User name').fill('tara');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent(), soon).toBe('Trading');
    const panel = page.locator(`details[data-runtime-id="${runtimeId}"]`);

    // The price chart: uPlot's canvas, with as many entries and exits marked as the trades that fall in its window.
    const chart = panel.locator('figure.prices[data-symbol="BTC-USD"]');
    await expect.poll(() => chart.locator('canvas').count(), soon).toBeGreaterThan(0);
    const executions = await get(`/agentic-trading/runtimes/${runtimeId}/executions?limit=100`);
    const first = Date.parse(executions.at(-1).scheduledAt);
    const within = (iso: string | null) => iso !== null && Date.parse(iso) >= first;
    expect(Number(await chart.getAttribute('data-entries'))).toBe(trades.filter((t: any) => within(t.entryAt)).length);
    expect(Number(await chart.getAttribute('data-exits'))).toBe(trades.filter((t: any) => within(t.exitAt)).length);
    expect(Number(await chart.getAttribute('data-exits'))).toBeGreaterThan(0);
    expect(await chart.locator('.u-legend').textContent()).toMatch(/Entries ▲.*Exits ▼/);

    // The open position's P&L: unrealized from the book, and its trade's after fees from the API.
    const position = runtime.book.positions[0];
    const open = trades.find((t: any) => t.status === 'open');
    const row = panel.getByRole('table', { name: 'Open positions of btc trend' }).locator('tbody tr');
    await expect.poll(() => row.locator('td[data-label="Unrealized P&L"]').textContent(), soon).toBe(signed(position.qty * (position.price - position.avgPrice)));
    expect(await row.locator('td[data-label="Trade P&L after fees"]').textContent()).toBe(signed(open.netPnlUsd));

    // The trades, newest first, after fees.
    const tradeRows = panel.getByRole('table', { name: 'Trades of btc trend' }).locator('tbody tr');
    expect(await tradeRows.count()).toBe(Math.min(trades.length, 20));
    const newestClosed = [...trades].reverse().find((t: any) => t.status === 'closed');
    const closedRow = tradeRows.locator('xpath=self::*[@data-status="closed"]').first();
    expect(await closedRow.locator('td[data-label="P&L after fees"]').textContent()).toBe(signed(newestClosed.netPnlUsd));
    expect(await closedRow.locator('td[data-label="Fees"]').textContent()).toBe(dollars(newestClosed.feesUsd));
    await screenshot(page, 'trading-trades');

    // The blocked execution names its limit, its value and the limit's.
    const tightPanel = page.locator(`details[data-runtime-id="${tight.id}"]`);
    const drawdown = blocked.riskAssessment.checks.find((c: any) => c.name === 'drawdown');
    await expect.poll(() => tightPanel.locator('td[data-label="Risk"]').allTextContents(), soon).toContain(`blocked by drawdown ${drawdown.value.toFixed(2)} % ≥ limit 0.01 %`);

    // The kill switch: halt the account, read back, and the next tick places nothing; then release it.
    await page.getByRole('button', { name: 'Halt trading (main)' }).click();
    await expect.poll(() => page.locator(`tr[data-account-id="${account.id}"] .badge`).textContent(), soon).toBe('halt');
    expect((await get('/agentic-trading/accounts')).find((a: any) => a.id === account.id).killSwitch).toBe('halt');
    await expect.poll(() => page.locator(`details[data-runtime-id="${runtimeId}"]`).textContent(), soon).toContain('The kill switch of main is on (halt: no order is placed).');
    await h.nextMinute();
    const [latest] = await get(`/agentic-trading/runtimes/${runtimeId}/executions?limit=1`);
    expect(latest).toMatchObject({ status: 'halted', riskAssessment: { killSwitch: 'halt' } });
    await page.getByRole('button', { name: 'Release kill switch (main)' }).click();
    await expect.poll(() => page.locator(`tr[data-account-id="${account.id}"] .badge`).textContent(), soon).toBe('off');
    expect((await get('/agentic-trading/accounts')).find((a: any) => a.id === account.id).killSwitch).toBe('off');
  }, 180_000);
});
