// The dashboard's trading page in a real browser (Debian's Chromium): a user's runtime with its book, its
// equity curve (uPlot's canvas), its executions page by page, and the controls: flatten closes the position
// and pause stops the runtime, each outcome read back from the API.
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, type TradingHarness } from '../trading/harness.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

let h: TradingHarness;
let browser: TestBrowser;
let page: Page;
const soon = { timeout: 10_000 };

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

describe.skipIf(browserMissing)('the trading page', () => {
  it('shows a runtime, its equity curve and executions, and flattens and pauses it', async () => {
    const { token, runtimeId } = await launch(h, 'tess', 'Trend follow. fast=2 slow=5 short=true');
    for (let i = 0; i < 25; i++) await h.nextMinute();
    const runtime = async () => (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}`, token)).body.data;
    // A position is open (short=true: the book is always long or short once it traded).
    expect((await runtime()).book.positions).toHaveLength(1);

    await page.goto(`${h.app.urls.api}/app/#/trading`);
    await page.getByLabel('User name').fill('tess');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent(), soon).toBe('Trading');
    const row = page.locator(`tr[data-runtime-id="${runtimeId}"]`);
    await expect.poll(() => row.textContent(), soon).toContain('active');
    const panel = page.locator(`details[data-runtime-id="${runtimeId}"]`);
    // The curve: uPlot's canvas inside the labelled figure.
    await expect.poll(() => panel.getByRole('img', { name: 'Equity curve of btc trend' }).locator('canvas').count(), soon).toBeGreaterThan(0);
    // Executions, a page of 20, then the older ones.
    const executions = panel.getByRole('table', { name: 'Executions of btc trend' }).locator('tbody tr');
    await expect.poll(() => executions.count(), soon).toBe(20);
    await panel.getByRole('button', { name: 'Older executions' }).click();
    await expect.poll(() => executions.count(), soon).toBe(25);
    await expect.poll(() => panel.getByRole('table', { name: 'Open positions' }).locator('tbody tr').count(), soon).toBe(1);
    await screenshot(page, 'trading-runtime');

    await panel.getByRole('button', { name: 'Flatten' }).click();
    await expect.poll(async () => page.locator(`details[data-runtime-id="${runtimeId}"]`).textContent(), soon).toContain('no position is left');
    expect((await runtime()).book.positions).toEqual([]);
    const flattened = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/executions?limit=5`, token)).body.data.filter((e: { triggerType: string }) => e.triggerType === 'flatten');
    expect(flattened).toMatchObject([{ status: 'completed', order: { status: 'filled' } }]);

    await page.locator(`details[data-runtime-id="${runtimeId}"]`).getByRole('button', { name: 'Pause' }).click();
    await expect.poll(async () => (await runtime()).status, soon).toBe('paused');
    await expect.poll(() => page.locator(`tr[data-runtime-id="${runtimeId}"]`).textContent(), soon).toContain('paused');
    await expect.poll(() => page.locator(`details[data-runtime-id="${runtimeId}"]`).getByRole('button', { name: 'Resume' }).count(), soon).toBe(1);
  }, 120_000);
});
