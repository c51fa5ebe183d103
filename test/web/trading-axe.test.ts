// The trading page with everything it can show (issue 45 item 3: every dashboard page at every width): two
// runtimes that traded for 25 minutes, one of them blocked by its drawdown limit, so each panel holds its price and
// equity charts, open positions, trades and executions. At 390, 768 and 1280 px, with every panel open: nothing
// scrolls the page sideways or reaches past the right edge, and axe-core finds no violation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openTradingHarness, runtimeBody, strategyBody, type TradingHarness } from '../trading/harness.js';
import { axeViolations } from './axe.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

let h: TradingHarness;
let browser: TestBrowser;
let runtimeIds: string[] = [];
const soon = { timeout: 15_000 };

beforeAll(async () => {
  if (browserMissing) return;
  h = await openTradingHarness();
  const { token, runtimeId } = await launch(h, 'tina', 'Trend follow. fast=2 slow=5 short=true');
  const strategy = (await h.call('POST', '/agentic-trading/strategies', token, strategyBody('Tight. fast=2 slow=5 short=true'))).body.data;
  const account = (await h.call('POST', '/agentic-trading/accounts/agent-wallets', token, { name: 'tight risk account with a long name' })).body.data;
  const tight = (await h.call('POST', '/agentic-trading/runtimes', token, runtimeBody(strategy.latestVersion.id, account.id, { name: 'tight drawdown, checked every minute', maxDrawdownPercent: 0.01 }))).body.data;
  await h.settle();
  for (let i = 0; i < 25; i++) await h.nextMinute();
  const trades = (await h.call('GET', `/agentic-trading/runtimes/${runtimeId}/trades`, token)).body.data as unknown[];
  expect(trades.length).toBeGreaterThan(1);
  runtimeIds = [runtimeId, tight.id];
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

/** Elements whose right edge is past the viewport's (the stacked tables' visually hidden heads aside). */
const PAST_THE_EDGE = `[...document.querySelectorAll('body *')]
  .filter((el) => !el.closest('thead') && el.getClientRects().length > 0 && el.getBoundingClientRect().right > innerWidth + 0.5)
  .map((el) => el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' right=' + Math.round(el.getBoundingClientRect().right))`;

describe.skipIf(browserMissing)('the trading page, full, at every width', () => {
  for (const width of [390, 768, 1280]) {
    it(`fits ${width} px with every runtime panel open, and axe-core finds no violation`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      const page = await context.newPage();
      await page.goto(`${h.app.urls.api}/app/#/trading`);
      await page.getByLabel('User name').fill('tina');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.locator('h1').textContent(), soon).toBe('Trading');
      await expect.poll(() => page.locator('details.runtime').count(), soon).toBe(2);
      await page.evaluate(`document.querySelectorAll('main details').forEach((d) => (d.open = true))`);
      for (const id of runtimeIds) {
        const panel = page.locator(`details[data-runtime-id="${id}"]`);
        // Loaded: its charts drawn and its executions listed.
        await expect.poll(() => panel.locator('figure canvas').count(), soon).toBeGreaterThan(0);
        await expect.poll(() => panel.locator('table').filter({ has: page.locator('caption', { hasText: /^Executions of/ }) }).locator('tbody tr').count(), soon).toBeGreaterThan(0);
      }
      await expect.poll(() => page.locator('main').textContent(), soon).not.toContain('Loading…');
      // The first runtime traded: its panel lists its trades too.
      await expect.poll(() => page.locator(`details[data-runtime-id="${runtimeIds[0]}"] caption`).allTextContents(), soon).toContain('Trades of btc trend');
      expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(width);
      expect(await page.evaluate(PAST_THE_EDGE)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      await context.close();
    }, 90_000);
  }
});
