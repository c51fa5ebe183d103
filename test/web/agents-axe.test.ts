// The agents page with everything it can show (issue 45 item 3: every dashboard page at every width): a running
// agent with a model provider's key and a conversation (answered by a stand-in of OpenAI's API over real HTTP), and
// one still without a key. At 390, 768 and 1280 px: a message sent from the page is answered in the page; nothing
// scrolls sideways or reaches past the right edge; axe-core finds no violation with every panel open.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { startProviderStandIn } from '../agents/provider-stand-in.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { axeViolations } from './axe.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

const keys = { openai: 'sk-openai-web-0123456789', anthropic: 'sk-ant-web-abcdefghij', openrouter: 'sk-or-web-9876543210' };
let standIn: Awaited<ReturnType<typeof startProviderStandIn>>;
let app: TestApp;
let browser: TestBrowser;
let token = '';
const soon = { timeout: 15_000 };

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = (await response.json()) as any;
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${JSON.stringify(answer)}`);
  return answer.data;
}

beforeAll(async () => {
  if (browserMissing) return;
  standIn = await startProviderStandIn({ keys });
  app = await buildTestApp({ roles: ['api'], env: standIn.env });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'ada', cents: 2500, note: 'test' });
  token = await app.identityToken('ada');
  const talking = (await call('POST', '/agents', { name: 'Support assistant for the record shop', type: 'runtime_a' })).agent.id;
  await call('POST', '/agents', { name: 'Research agent', type: 'runtime_b' });
  await app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === 'agents.deploy')!.run(new AbortController().signal);
  expect((await call('GET', '/agents')).map((a: { status: string }) => a.status)).toEqual(['running', 'running']);
  await call('PUT', `/agents/${talking}/providers`, { provider: 'openai', apiKey: keys.openai });
  // A long unbroken line (a URL) in the history: it must wrap, not widen the page.
  await call('POST', `/agents/${talking}/chat`, { messages: [{ role: 'user', content: 'Where is order https://shop.example/orders/2026/0f8e2a4b-7c1d-4e5f-9a3b-2c6d8e0f1a2b-and-a-long-tail?' }], session: 'main' });
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await standIn?.close();
});

/** Elements whose right edge is past the viewport's (the stacked tables' visually hidden heads aside). */
const PAST_THE_EDGE = `[...document.querySelectorAll('body *')]
  .filter((el) => !el.closest('thead') && el.getClientRects().length > 0 && el.getBoundingClientRect().right > innerWidth + 0.5)
  .map((el) => el.tagName.toLowerCase() + (el.className ? '.' + String(el.className).split(' ').join('.') : '') + ' right=' + Math.round(el.getBoundingClientRect().right))`;

describe.skipIf(browserMissing)('the agents page, full, at every width', () => {
  for (const width of [390, 768, 1280]) {
    it(`fits ${width} px: a chat answered in the page, every panel open, and axe-core finds no violation`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
      const page = await context.newPage();
      await page.goto(`${app.urls.api}/app/#/agents`);
      await page.getByLabel('User name').fill('ada');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect.poll(() => page.locator('h1').textContent(), soon).toBe('Agents and credits');
      await expect.poll(() => page.locator('details.agent').count(), soon).toBe(2);
      await expect.poll(() => page.locator('main').textContent(), soon).not.toContain('Loading…');
      const chat = page.getByRole('list', { name: 'Chat with Support assistant for the record shop' });
      await expect.poll(() => chat.locator('li').count(), soon).toBeGreaterThanOrEqual(2);

      // A message from the page, answered in it.
      await page.getByRole('form', { name: 'Message to Support assistant for the record shop' }).getByLabel('Message').fill(`Hello from ${width} px`);
      await page.getByRole('form', { name: 'Message to Support assistant for the record shop' }).getByRole('button', { name: 'Send' }).click();
      await expect.poll(() => chat.locator('li.msg.assistant').last().textContent(), soon).toContain(`openai says: Hello from ${width} px`);

      await page.evaluate(`document.querySelectorAll('main details').forEach((d) => (d.open = true))`);
      expect(await page.evaluate('document.scrollingElement.scrollWidth')).toBeLessThanOrEqual(width);
      expect(await page.evaluate(PAST_THE_EDGE)).toEqual([]);
      expect(await axeViolations(page)).toEqual([]);
      await context.close();
    }, 60_000);
  }
});
