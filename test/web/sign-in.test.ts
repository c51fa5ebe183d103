// The dashboard's sign-in form follows the token route (GET /app/sign-in.json says which): the dev
// issuer's user-name form only where POST /dev/identity/token exists (the dev issuer on the embedded
// devchain). Here the dev issuer runs but the chain is external (CHAIN_RPC_URL, an anvil of the test's
// own), so its JWKS is served and the token route is not: the page must ask for a pasted identity token.
// The embedded case is dashboard.test.ts's, the OpenID provider's oidc-sign-in.test.ts's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEphemeralDevchain, type Devchain } from '../../src/chain/devchain.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { browserMissing, launchChromium, type TestBrowser } from './browser.js';

let chain: Devchain;
let app: TestApp;
let browser: TestBrowser;

beforeAll(async () => {
  if (browserMissing) return;
  chain = await startEphemeralDevchain();
  app = await buildTestApp({ roles: ['api'], env: { CHAIN_RPC_URL: chain.rpcUrl } });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await chain?.stop();
});

describe.skipIf(browserMissing)('sign-in with the dev issuer on an external chain', () => {
  it('asks for an identity token, not a user name, where the token route does not exist', async () => {
    expect((await fetch(`${app.urls.api}/dev/identity/jwks.json`)).status).toBe(200);
    const token = await fetch(`${app.urls.api}/dev/identity/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sub: 'dana' }) });
    expect(token.status).toBe(404);
    expect(await (await fetch(`${app.urls.api}/app/sign-in.json`)).json()).toEqual({ mode: 'token' });

    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/`);
    await expect.poll(() => page.locator('h1').textContent()).toBe('Sign in');
    await expect.poll(() => page.getByLabel('Identity token').count()).toBe(1);
    expect(await page.getByLabel('User name').count()).toBe(0);

    // A token the issuer signed (as `tollgate dev token` makes one) signs in.
    await page.getByLabel('Identity token').fill(await app.identityToken('dana'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');
    expect(await page.getByText('Signed in as').textContent()).toContain('dana');
    await page.close();
  });
});
