// The OAuth flow of /mcp as a client drives it over HTTP (register, authorize, consent, token), for the tests that
// look at the protocol itself; test/oauth/clients.test.ts drives it with the real clients and a real browser.
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, headers: response.headers, body };
}

export const register = async (app: TestApp, metadata: Record<string, unknown>): Promise<Answer> =>
  answerOf(await fetch(`${app.urls.api}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) }));

/** POST /oauth/token with a form; `basic` = [id, secret] for HTTP Basic client authentication. */
export async function token(app: TestApp, form: Record<string, string>, basic?: [string, string]): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(basic[0])}:${encodeURIComponent(basic[1])}`).toString('base64')}`;
  return answerOf(await fetch(`${app.urls.api}/oauth/token`, { method: 'POST', headers, body: new URLSearchParams(form) }));
}

/** A JSON call to the api origin with a bearer token. */
export async function api(app: TestApp, method: string, path: string, bearer: string, body?: unknown): Promise<Answer> {
  return answerOf(
    await fetch(`${app.urls.api}${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
}

/** One JSON-RPC request to /mcp (stateless: no initialize needed). */
export async function mcp(app: TestApp, authorization: string | undefined, method = 'tools/call', params: Record<string, unknown> = { name: 'get_wallet', arguments: {} }): Promise<Answer> {
  return answerOf(
    await fetch(`${app.urls.api}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(authorization ? { authorization } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    }),
  );
}

export interface Connection {
  clientId: string;
  clientSecret?: string;
  redirectUri: string;
  accessToken: string;
  refreshToken: string;
}

/**
 * The whole authorization code flow over HTTP: register (public unless `confidential`), authorize, the user's consent
 * through the dashboard's route (identity token + management credential), the code exchange with PKCE.
 */
export async function connect(
  app: TestApp,
  options: { user: string; mgmt: string; walletId: string; ceiling: string; confidential?: boolean; redirectUri?: string; name?: string },
): Promise<Connection> {
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:53682/callback';
  const registered = await register(app, { redirect_uris: [redirectUri], client_name: options.name ?? 'Test client', token_endpoint_auth_method: options.confidential ? 'client_secret_basic' : 'none' });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const { client_id: clientId, client_secret: clientSecret } = registered.body;
  const { verifier, challenge } = pkce();
  const request = { response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: `s-${randomBytes(4).toString('hex')}`, resource: `${app.urls.api}/mcp`, scope: 'wallet' };
  const code = await consent(app, options.user, request, { walletId: options.walletId, managementCredential: options.mgmt, ceiling: options.ceiling });
  const form = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, resource: `${app.urls.api}/mcp` };
  const exchanged = clientSecret ? await token(app, form, [clientId, clientSecret]) : await token(app, { ...form, client_id: clientId });
  expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
  return { clientId, clientSecret, redirectUri, accessToken: exchanged.body.access_token, refreshToken: exchanged.body.refresh_token };
}

/** The user approves `request` on the dashboard's route; answers the code the redirect carries (its state checked). */
export async function consent(app: TestApp, user: string, request: Record<string, string>, approve: { walletId: string; managementCredential: string; ceiling: string }): Promise<string> {
  const identity = await app.identityToken(user);
  const answer = await api(app, 'POST', '/v1/oauth/consent', identity, { request, decision: 'approve', ...approve });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const back = new URL(answer.body.data.redirectTo);
  expect(back.searchParams.get('state')).toBe(request.state ?? null);
  expect(back.searchParams.get('iss')).toBe(app.urls.api);
  return back.searchParams.get('code')!;
}
