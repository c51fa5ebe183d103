// The dashboard signs in through the configured OpenID provider: Authorization Code with PKCE (S256),
// state and nonce, in Chromium. The provider is a stand-in speaking the real protocol over HTTP on
// 127.0.0.1 (discovery, authorize, token, JWKS; CORS for the app's origin only, and no preflight answers,
// as the page's requests must be simple ones), and the API verifies its tokens through IDENTITY_JWKS_URL
// like any production provider's. It checks what the page sent: the verifier against the challenge, the
// redirect URI, the client. Refusals (access_denied, a forged state, a token endpoint that refuses, an
// id_token for another nonce) must be said in words on the sign-in page, with no one signed in.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { calculateJwkThumbprint, decodeJwt, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { browserMissing, launchChromium, screenshot, type TestBrowser } from './browser.js';

const CLIENT_ID = 'tollgate-dashboard';
const SUBJECT = 'oidc-user-7f3a';
const TOKEN_KEY = 'tollgate.identityToken';

interface Authorization {
  query: Record<string, string>;
  code: string;
}
interface TokenRequest {
  form: Record<string, string>;
  origin: string | undefined;
  contentType: string | undefined;
  /** base64url(SHA-256(code_verifier)) equalled the authorization's code_challenge. */
  verifierMatched: boolean;
}

/** A stand-in OpenID provider: auto-consents (or refuses, with `deny`), one ES256 key. */
class StandInProvider {
  issuer = '';
  /** The app's origin, the only one CORS answers (set once the app listens). */
  appOrigin = '';
  deny = false;
  refuseTokens = false;
  /** Answer an id_token made for another sign-in (another nonce), as an injected token would be. */
  otherNonce = false;
  readonly authorizations: Authorization[] = [];
  readonly tokenRequests: TokenRequest[] = [];
  readonly issued: string[] = [];
  private readonly codes = new Map<string, { clientId: string; redirectUri: string; challenge: string; nonce: string; used: boolean }>();
  private server!: Server;
  private key!: CryptoKey;
  private jwk!: JWK;

  async start(): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    this.key = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), alg: 'ES256', use: 'sig' };
    this.jwk.kid = await calculateJwkThumbprint(this.jwk);
    this.server = createServer((request, response) => void this.handle(request, response).catch((error: Error) => response.writeHead(500).end(error.message)));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url!, this.issuer);
    const cors = request.headers.origin === this.appOrigin ? { 'access-control-allow-origin': this.appOrigin, vary: 'origin' } : {};
    const sendJson = (status: number, body: unknown): void => void response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...cors }).end(JSON.stringify(body));
    if (request.method === 'GET' && url.pathname === '/.well-known/openid-configuration') {
      return sendJson(200, {
        issuer: this.issuer,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        jwks_uri: `${this.issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
        code_challenge_methods_supported: ['S256'],
      });
    }
    if (request.method === 'GET' && url.pathname === '/jwks') return sendJson(200, { keys: [this.jwk] });
    if (request.method === 'GET' && url.pathname === '/authorize') return this.authorize(url, response);
    if (request.method === 'POST' && url.pathname === '/token') {
      let raw = '';
      for await (const chunk of request) raw += chunk;
      const form = Object.fromEntries(new URLSearchParams(raw));
      const grant = this.codes.get(form.code ?? '');
      const verifierMatched = !!grant && !!form.code_verifier && base64url(createHash('sha256').update(form.code_verifier).digest()) === grant.challenge;
      this.tokenRequests.push({ form, origin: request.headers.origin, contentType: request.headers['content-type'], verifierMatched });
      if (this.refuseTokens) return sendJson(400, { error: 'invalid_grant', error_description: 'the authorization code has expired' });
      const problem = !grant
        ? 'unknown code'
        : grant.used
          ? 'code already used'
          : form.grant_type !== 'authorization_code'
            ? 'grant_type'
            : form.client_id !== grant.clientId
              ? 'client_id'
              : form.redirect_uri !== grant.redirectUri
                ? 'redirect_uri'
                : !verifierMatched
                  ? 'code_verifier does not match the code_challenge'
                  : null;
      if (problem) return sendJson(400, { error: 'invalid_grant', error_description: problem });
      grant!.used = true;
      const idToken = await new SignJWT({ nonce: this.otherNonce ? 'another-sign-in' : grant!.nonce })
        .setProtectedHeader({ alg: 'ES256', kid: this.jwk.kid, typ: 'JWT' })
        .setIssuer(this.issuer)
        .setAudience(CLIENT_ID)
        .setSubject(SUBJECT)
        .setIssuedAt()
        .setExpirationTime('10m')
        .sign(this.key);
      this.issued.push(idToken);
      return sendJson(200, { id_token: idToken, access_token: randomBytes(24).toString('base64url'), token_type: 'Bearer', expires_in: 600 });
    }
    response.writeHead(404).end();
  }

  /** Auto-consent: the request must be a correct PKCE code request from the registered client. */
  private authorize(url: URL, response: ServerResponse): void {
    const query = Object.fromEntries(url.searchParams);
    const redirectUri = `${this.appOrigin}/app/`;
    const problem =
      query.client_id !== CLIENT_ID
        ? 'unknown client_id'
        : query.redirect_uri !== redirectUri
          ? 'redirect_uri is not registered'
          : query.response_type !== 'code'
            ? 'response_type must be code'
            : query.code_challenge_method !== 'S256' || !/^[\w-]{43}$/.test(query.code_challenge ?? '')
              ? 'PKCE with S256 is required'
              : !query.state || !query.nonce || !query.scope?.split(' ').includes('openid')
                ? 'state, nonce and the openid scope are required'
                : null;
    // A provider shows an error page (no redirect) when the client or redirect URI is wrong.
    if (problem) {
      response.writeHead(400, { 'content-type': 'text/plain' }).end(`stand-in provider: ${problem}`);
      return;
    }
    const back = new URL(redirectUri);
    const code = randomBytes(16).toString('base64url');
    if (this.deny) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user declined');
    } else {
      this.codes.set(code, { clientId: query.client_id!, redirectUri: query.redirect_uri!, challenge: query.code_challenge!, nonce: query.nonce!, used: false });
      back.searchParams.set('code', code);
    }
    back.searchParams.set('state', query.state!);
    this.authorizations.push({ query, code });
    response.writeHead(302, { location: back.href }).end();
  }
}

const base64url = (bytes: Buffer) => bytes.toString('base64url');

const provider = new StandInProvider();
let app: TestApp;
let browser: TestBrowser;

beforeAll(async () => {
  if (browserMissing) return;
  await provider.start();
  app = await buildTestApp({
    roles: ['api'],
    env: {
      IDENTITY_JWKS_URL: `${provider.issuer}/jwks`,
      IDENTITY_ISSUER: provider.issuer,
      IDENTITY_AUDIENCE: CLIENT_ID,
      IDENTITY_OIDC_ISSUER: provider.issuer,
      IDENTITY_OIDC_CLIENT_ID: CLIENT_ID,
    },
  });
  provider.appOrigin = new URL(app.urls.api).origin;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await provider.close();
});
beforeEach(() => {
  provider.deny = false;
  provider.refuseTokens = false;
  provider.otherNonce = false;
});

/** What the tab keeps in sessionStorage, read in the page (this file is typed for node, not the DOM). */
const tabStorage = (page: Page) => page.evaluate(() => ({ ...(globalThis as unknown as { sessionStorage: Record<string, string> }).sessionStorage }));
const host = () => new URL(provider.issuer).host;
const signInButton = (page: Page) => page.getByRole('button', { name: `Sign in with ${host()}` });

describe.skipIf(browserMissing)('dashboard sign-in through an OpenID provider', () => {
  it('tells the page to sign in with the provider, and lets the page fetch from the provider only', async () => {
    const settings = await fetch(`${app.urls.api}/app/sign-in.json`);
    expect(settings.headers.get('cache-control')).toBe('no-cache');
    expect(await settings.json()).toEqual({ mode: 'oidc', issuer: provider.issuer, clientId: CLIENT_ID, scope: 'openid', token: 'id_token' });
    const csp = (await fetch(`${app.urls.api}/app/`)).headers.get('content-security-policy')!;
    expect(csp).toContain(`connect-src 'self' ${provider.issuer};`);
    // No dev issuer here: its token route is absent, as is its user-name form.
    expect((await fetch(`${app.urls.api}/dev/identity/token`, { method: 'POST' })).status).toBe(404);
  });

  it('signs in with Authorization Code + PKCE, lands back on the page it left, and the token works with the API', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/#/agents`);
    await expect.poll(() => page.locator('h1').first().textContent()).toBe('Sign in');
    // The token field stays below the provider's button as a fallback.
    expect(await page.getByLabel('Identity token').count()).toBe(1);
    expect(await page.getByLabel('User name').count()).toBe(0);
    await screenshot(page, 'sign-in-oidc');

    await signInButton(page).click();
    await expect.poll(() => page.locator('h1').textContent(), { timeout: 15_000 }).toBe('Agents and credits');
    expect(await page.getByText('Signed in as').textContent()).toContain(SUBJECT);
    expect(await page.getByRole('alert').count()).toBe(0); // the API took the token for /agents and /credits
    // The code and state are gone from the address bar; the page it left is back.
    expect(page.url()).toBe(`${app.urls.api}/app/#/agents`);

    // What the provider saw: one authorization, one token request redeeming it with the right verifier.
    expect(provider.authorizations).toHaveLength(1);
    const [{ query, code }] = provider.authorizations;
    expect(query).toMatchObject({ client_id: CLIENT_ID, redirect_uri: `${provider.appOrigin}/app/`, response_type: 'code', scope: 'openid', code_challenge_method: 'S256' });
    expect(query.state).toMatch(/^[\w-]{43}$/);
    expect(query.nonce).toMatch(/^[\w-]{43}$/);
    expect(provider.tokenRequests).toHaveLength(1);
    const [redeem] = provider.tokenRequests;
    expect(redeem.form).toEqual({ grant_type: 'authorization_code', code, redirect_uri: `${provider.appOrigin}/app/`, client_id: CLIENT_ID, code_verifier: expect.stringMatching(/^[\w-]{43}$/) });
    expect(redeem.verifierMatched).toBe(true);
    expect(redeem.contentType).toMatch(/^application\/x-www-form-urlencoded/);
    expect(redeem.origin).toBe(provider.appOrigin);
    // The session holds the provider's id_token, whose nonce is the one the page sent; no secret stays behind.
    const stored = await tabStorage(page);
    expect(stored).toEqual({ [TOKEN_KEY]: provider.issued[0] });
    expect(decodeJwt(provider.issued[0]!).nonce).toBe(query.nonce);

    await page.getByRole('link', { name: 'Projects', exact: true }).click();
    await page.getByLabel('Project name').fill('Provider shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByTestId('secret').waitFor({ timeout: 10_000 });
    const projects = await fetch(`${app.urls.api}/v1/projects`, { headers: { authorization: `Bearer ${stored[TOKEN_KEY]}` } });
    expect(projects.status).toBe(200);
    expect(JSON.stringify(await projects.json())).toContain('Provider shop');

    // A reload does not replay the answer: still signed in, no second token request.
    await page.reload();
    await expect.poll(() => page.locator('h1').textContent()).toBe('Projects');
    expect(provider.tokenRequests).toHaveLength(1);
    await page.close();
  });

  it('says in words that the provider refused (access_denied), and signs no one in', async () => {
    provider.deny = true;
    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/`);
    await signInButton(page).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('access was denied');
    expect(await page.getByRole('alert').textContent()).toContain('The user declined');
    expect(await page.locator('h1').first().textContent()).toBe('Sign in');
    expect(await signInButton(page).count()).toBe(1);
    expect(page.url()).toBe(`${app.urls.api}/app/`);
    expect(await tabStorage(page)).toEqual({}); // no token, and nothing of the sign-in left behind
    expect(await page.getByText('Signed in as').count()).toBe(0);
    await page.close();
  });

  it('refuses an answer with a state this tab did not send, without redeeming its code', async () => {
    const before = provider.tokenRequests.length;
    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/?code=stolen&state=forged`);
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('does not belong to a sign-in started in this tab');
    expect(provider.tokenRequests.length).toBe(before);
    expect(await tabStorage(page)).toEqual({}); // no token, and nothing of the sign-in left behind
    await page.close();
  });

  it('says so when the token endpoint refuses the code', async () => {
    provider.refuseTokens = true;
    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/`);
    await signInButton(page).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('did not issue tokens for this sign-in (invalid_grant: the authorization code has expired)');
    expect(await tabStorage(page)).toEqual({}); // no token, and nothing of the sign-in left behind
    await page.close();
  });

  it('refuses an id_token whose nonce is not the one this sign-in sent', async () => {
    provider.otherNonce = true;
    const page = await browser.newPage();
    await page.goto(`${app.urls.api}/app/`);
    await signInButton(page).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('does not answer this sign-in (nonce)');
    expect(await tabStorage(page)).toEqual({}); // no token, and nothing of the sign-in left behind
    await page.close();
  });
});
