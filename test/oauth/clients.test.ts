// Real OAuth clients against /mcp, the consent given in Debian's Chromium on the dashboard's page: the official
// TypeScript SDK's OAuth client (discovery from the 401, dynamic registration, PKCE, the code exchange, a refresh
// when its access token expires) and `mcp-remote` (the stdio proxy Claude Desktop and others run), each connecting,
// listing the tools and paying the app's own /x402-test/ping within the ceiling the user granted, the payment after
// refused. Also what the issue reported: mcp-remote with a bad credential no longer dies on `POST /register`.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, createWallet, freePort, settledPayment, waitFor, type PaidPayment } from '../wallets/helpers.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from '../web/browser.js';

const MCP_REMOTE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/mcp-remote/dist/proxy.js');
const PRICE = 100n;
const TOOLS = ['get_budget', 'get_wallet', 'list_payments', 'pay_and_call'];

let app: TestApp;
let browser: TestBrowser;
let mgmt: string;
let wallet: { id: string; address: Address; secret: string };
let max: { network: string; asset: string; amount: string };
const dirs: string[] = [];
/** The SDK's connected client and its storage, for the Connected apps test after it. */
let sdk: { client: Client; provider: MemoryProvider } | undefined;

const balance = () => app.ctx.chain.devchain!.balanceOf(wallet.address);
const payPing = (client: Client) => client.callTool({ name: 'pay_and_call', arguments: { url: `${app.urls.api}/x402-test/ping`, maxPayment: max } }) as Promise<CallToolResult>;

/**
 * The user's side, in Chromium: the application sent the browser to `authorizationUrl`; they sign in (the dev issuer:
 * any name), type the management credential that owns the wallet, pick it, set the ceiling and allow. Resolves once
 * the browser has gone back to the application's redirect URI.
 */
async function consentInBrowser(authorizationUrl: string, user: string, ceilingUsdg: string, shot?: string): Promise<void> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  try {
    await page.goto(authorizationUrl);
    await page.getByLabel('User name').fill(user);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Management credential').fill(mgmt);
    await page.getByRole('button', { name: 'Show wallets' }).click();
    await page.getByRole('radio', { name: /OAuth wallet/ }).check();
    await page.getByLabel(/Spending ceiling/).fill(ceilingUsdg);
    expect(await page.getByTestId('redirect-host').innerText()).toMatch(/^127\.0\.0\.1:\d+$/);
    if (shot) await screenshot(page, shot);
    const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, textarea')].filter((el) => !el.labels?.length && !el.getAttribute('aria-label')).map((el) => el.outerHTML)`);
    expect(unlabelled).toEqual([]);
    const redirected = page.waitForURL((url) => url.hostname === '127.0.0.1' && url.port !== new URL(app.urls.api).port, { timeout: 15_000 });
    await page.getByRole('button', { name: 'Allow' }).click();
    await redirected;
  } finally {
    await page.close();
  }
}

/** The SDK's client-side storage, in memory: what a real client keeps between runs. */
class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  sentState?: string;
  authorizationUrl?: URL;
  constructor(readonly redirectUrl: string) {}
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'SDK test agent', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  state() {
    return (this.sentState = randomBytes(12).toString('hex'));
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(client: OAuthClientInformationMixed) {
    this.client = client;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier!;
  }
}

/** The application's redirect URI: a listener that hands over the first callback's query. */
function callbackListener(port: number): { query: Promise<URLSearchParams>; close: () => void } {
  let resolve!: (query: URLSearchParams) => void;
  const query = new Promise<URLSearchParams>((r) => (resolve = r));
  const server = http.createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' }).end('You can close this tab.');
    resolve(new URL(request.url!, `http://127.0.0.1:${port}`).searchParams);
  });
  server.listen(port, '127.0.0.1');
  return { query, close: () => server.close() };
}

beforeAll(async () => {
  if (browserMissing) return;
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  max = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' };
  mgmt = await app.mgmtSecret('oauth-clients');
  const made = await createWallet(app, mgmt, 'oauth-clients', { name: 'OAuth wallet' });
  wallet = { id: made.wallet.id, address: made.wallet.address, secret: made.secret };
  await app.ctx.chain.devchain!.fund(wallet.address, '1');
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(browserMissing)('OAuth clients against /mcp, the consent in Chromium', () => {
  it('the SDK’s OAuth client: registers, is sent to the consent, exchanges the code, lists the tools, pays within the ceiling and is refused past it; refreshes when its token expires', async () => {
    const port = await freePort();
    const callback = callbackListener(port);
    const provider = new MemoryProvider(`http://127.0.0.1:${port}/callback`);
    const url = new URL(`${app.urls.api}/mcp`);
    try {
      await expect(new Client({ name: 'sdk-agent', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))).rejects.toThrow(UnauthorizedError);
      const asked = provider.authorizationUrl!;
      expect(`${asked.origin}${asked.pathname}`).toBe(`${app.urls.api}/oauth/authorize`);
      expect(Object.fromEntries(asked.searchParams)).toMatchObject({ response_type: 'code', code_challenge_method: 'S256', resource: `${app.urls.api}/mcp`, scope: 'wallet', state: provider.sentState });

      await consentInBrowser(asked.href, 'sdk-user', '0.00025', 'oauth-consent');
      const answered = await callback.query;
      expect(answered.get('state')).toBe(provider.sentState);
      expect(answered.get('iss')).toBe(app.urls.api);
      const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
      await transport.finishAuth(answered.get('code')!);
      expect(provider.saved).toMatchObject({ token_type: 'Bearer', scope: 'wallet', access_token: expect.stringMatching(/^svc_oauth_at_/), refresh_token: expect.stringMatching(/^svc_oauth_rt_/) });

      const client = new Client({ name: 'sdk-agent', version: '1.0.0' });
      await client.connect(transport);
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOLS);
      const before = await balance();
      for (let i = 0; i < 2; i++) {
        const paid = await payPing(client);
        expect(paid.isError, JSON.stringify(paid.structuredContent)).toBeFalsy();
        // Answered on the seller's success; the chain confirms it after.
        expect(paid.structuredContent!.payment).toMatchObject({ status: 'pending', amount: '100' });
        await settledPayment(app, wallet.secret, paid.structuredContent!.payment as PaidPayment);
      }
      const refused = await payPing(client);
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ reason: 'ceiling_exceeded', rule: 'ceiling', ceiling: { amount: '250', spent: '200', remaining: '50' } });
      expect(await balance()).toBe(before - 2n * PRICE);

      // The access token expires: the next call is a 401, the client refreshes (rotated) and goes on.
      const first = provider.saved!;
      await app.ctx.database.query(sql`update oauth_tokens set expires_at = now() - interval '1 second' where token_hash = ${app.ctx.hasher.hash(first.access_token)}`);
      const budget = (await client.callTool({ name: 'get_budget', arguments: {} })) as CallToolResult;
      expect(budget.structuredContent!.ceiling).toMatchObject({ amount: '250', spent: '200', remaining: '50' });
      expect(provider.saved!.access_token).not.toBe(first.access_token);
      expect(provider.saved!.refresh_token).not.toBe(first.refresh_token);
      sdk = { client, provider };
    } finally {
      callback.close();
    }
  });

  it('Connected apps lists the grant with what it paid; Revoke there stops the client at its next call', async () => {
    const { client, provider } = sdk!;
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await page.goto(`${app.urls.api}/app/#/connected-apps`);
      await page.getByLabel('User name').fill('sdk-user');
      await page.getByRole('button', { name: 'Sign in' }).click();
      const row = page.locator('tr[data-grant-id]').filter({ hasText: 'SDK test agent' });
      await row.waitFor();
      const cells = await row.getByRole('cell').allInnerTexts();
      expect(cells.slice(1, 5)).toEqual([expect.stringContaining('OAuth wallet'), '0.00025 USDG', '0.0002 USDG', '0.00005 USDG']);
      expect(cells[7]).toBe('active');
      await screenshot(page, 'oauth-connected-apps');
      await row.getByRole('button', { name: 'Revoke SDK test agent' }).click();
      await expect.poll(() => row.getByRole('cell').nth(7).innerText(), { timeout: 10_000 }).toBe('revoked');
    } finally {
      await page.close();
    }
    // Refused at once, by the database's word: the raw token, then the client (its refresh is refused too).
    const raw = await fetch(`${app.urls.api}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.saved!.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(raw.status).toBe(401);
    await expect(client.listTools()).rejects.toThrow();
    await client.close();
  });

  it('mcp-remote: signs in through the browser, then the stdio client lists the tools and pays within the ceiling, refused past it', async () => {
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-remote-'));
    dirs.push(configDir);
    const callbackPort = await freePort();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, `${app.urls.api}/mcp`, String(callbackPort), '--host', '127.0.0.1'],
      // BROWSER=true: its opener "opens" nothing; the test is the browser, reading the URL it prints.
      env: { MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'true' },
      stderr: 'pipe',
    });
    let said = '';
    transport.stderr!.on('data', (chunk: Buffer) => (said += chunk.toString()));
    const client = new Client({ name: 'via-mcp-remote', version: '1.0.0' });
    try {
      const connecting = client.connect(transport);
      const authorizationUrl = await waitFor(async () => /Please authorize this client by visiting:\s*\n(\S+)/.exec(said)?.[1], 30_000).catch(() => {
        throw new Error(`mcp-remote printed no authorization URL:\n${said}`);
      });
      expect(authorizationUrl.startsWith(`${app.urls.api}/oauth/authorize?`)).toBe(true);
      await consentInBrowser(authorizationUrl, 'remote-user', '0.0001');
      await connecting;
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOLS);
      const before = await balance();
      const paid = (await payPing(client)) as CallToolResult;
      expect(paid.isError, JSON.stringify(paid.structuredContent)).toBeFalsy();
      expect(paid.structuredContent!.payment).toMatchObject({ status: 'pending', amount: '100' });
      await settledPayment(app, wallet.secret, paid.structuredContent!.payment as PaidPayment);
      const refused = (await payPing(client)) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ reason: 'ceiling_exceeded', ceiling: { amount: '100', spent: '100', remaining: '0' } });
      expect(await balance()).toBe(before - PRICE);
      const grants = await app.ctx.database.query<{ user_id: string; name: string }>(sql`select g.user_id, c.name from oauth_grants g join oauth_clients c on c.id = g.client_id where g.user_id = 'remote-user'`);
      expect(grants).toHaveLength(1);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nmcp-remote said:\n${said.slice(-4000)}`);
    } finally {
      await client.close();
    }
  });

  it('mcp-remote with a bad credential header no longer dies on POST /register: the 401 leads it to discovery, registration and our authorization URL', async () => {
    const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-remote-'));
    dirs.push(configDir);
    const child = spawn(process.execPath, [MCP_REMOTE, `${app.urls.api}/mcp`, String(await freePort()), '--host', '127.0.0.1', '--header', 'Authorization: Bearer svc_wallet_not-a-live-one'], {
      env: { PATH: process.env.PATH, HOME: configDir, MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'true' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let said = '';
    child.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
    try {
      const clients = async () => Number((await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from oauth_clients`))[0]!.n);
      const registered = await clients();
      // An MCP client's first message, as a stdio client would send it.
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
      const url = await waitFor(async () => /Please authorize this client by visiting:\s*\n(\S+)/.exec(said)?.[1], 30_000).catch(() => {
        throw new Error(`mcp-remote printed no authorization URL:\n${said}`);
      });
      expect(url.startsWith(`${app.urls.api}/oauth/authorize?`)).toBe(true);
      expect(said).not.toContain('No route for POST /register');
      expect(await clients()).toBe(registered + 1);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
