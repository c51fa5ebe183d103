// The authorization server of /mcp over HTTP, as the MCP specification's authorization section has it: discovery
// (RFC 9728, RFC 8414), dynamic registration (RFC 7591), the authorization code flow with PKCE S256, rotating refresh
// tokens whose reuse revokes the grant, the consent through the dashboard's route (identity token + the management
// credential that owns the wallet), and what a grant may pay: its ceiling, counted on chain, the wallet's policy too.
import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, freePort, settledPayment } from '../wallets/helpers.js';
import { api, connect, consent, mcp, pkce, register, token, type Connection } from './helpers.js';

const PRICE = 100n; // /x402-test/ping, atomic USDG
let app: TestApp;
let base: string;
let mgmt: string;
let wallet: { id: string; address: Address; secret: string };
let max: { network: string; asset: string; amount: string };
const REDIRECT = 'http://127.0.0.1:53682/callback';

const bearer = (value: string) => `Bearer ${value}`;
const balance = (address: Address) => app.ctx.chain.devchain!.balanceOf(address);
const rows = async <T>(query: ReturnType<typeof sql>) => app.ctx.database.query<T>(query);
const payPing = (accessToken: string) => mcp(app, bearer(accessToken), 'tools/call', { name: 'pay_and_call', arguments: { url: `${base}/x402-test/ping`, maxPayment: max } });
const tool = (answer: { body: any }) => answer.body.result as { isError?: boolean; structuredContent: any }; // eslint-disable-line @typescript-eslint/no-explicit-any
const authorizeUrl = (params: Record<string, string>) => `${base}/oauth/authorize?${new URLSearchParams(params)}`;

async function newWallet(externalId: string, fundUsdg = '1') {
  const made = await createWallet(app, mgmt, externalId);
  await app.ctx.chain.devchain!.fund(made.wallet.address, fundUsdg);
  return { id: made.wallet.id as string, address: made.wallet.address as Address, secret: made.secret };
}

beforeAll(async () => {
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  base = app.urls.api;
  max = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' };
  mgmt = await app.mgmtSecret('oauth-owner');
  wallet = await newWallet('oauth-main');
});
afterAll(async () => app?.close());

describe('discovery', () => {
  it('serves the protected resource metadata (RFC 9728) at the resource’s well-known path and at the root, naming Tollgate as the authorization server', async () => {
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const answer = await fetch(`${base}${path}`);
      expect(answer.status, path).toBe(200);
      expect(await answer.json()).toEqual({ resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ['wallet'], bearer_methods_supported: ['header'], resource_name: 'Tollgate wallet (MCP)' });
    }
  });

  it('serves the authorization server metadata (RFC 8414): code flow with PKCE S256 only, registration, refresh tokens', async () => {
    const document = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(document).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('puts WWW-Authenticate: Bearer resource_metadata="…" on every 401 of /mcp (POST, GET, DELETE), and the URL it names answers', async () => {
    const metadataUrl = `${base}/.well-known/oauth-protected-resource/mcp`;
    const none = await mcp(app, undefined);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="wallet"`);
    for (const method of ['GET', 'DELETE']) {
      const answer = await fetch(`${base}/mcp`, { method, headers: { authorization: 'Bearer svc_wallet_nothing-like-a-real-one' } });
      expect(answer.status, method).toBe(401);
      expect(answer.headers.get('www-authenticate'), method).toMatch(new RegExp(`^Bearer resource_metadata="${metadataUrl}", scope="wallet", error="invalid_token", error_description="[^"]+"$`));
    }
    expect((await fetch(metadataUrl)).status).toBe(200);
  });

  it('says which credential it refused: none, a wallet credential by its prefix, a management credential, a refresh token, an unknown access token', async () => {
    const said = async (authorization: string | undefined) => {
      const answer = await mcp(app, authorization);
      expect(answer.status).toBe(401);
      expect(answer.body.code).toBe(1001);
      return answer.body as { message: string; data: { credential: string; prefix?: string } };
    };
    expect(await said(undefined)).toMatchObject({ message: expect.stringMatching(/^No credential: send Authorization: Bearer/), data: { credential: 'none' } });
    const badWallet = await said('Bearer svc_wallet_AbCdEfGhIjKlMnOp');
    expect(badWallet).toEqual({ code: 1001, message: 'The wallet credential svc_wallet_AbCdEfGh… was refused: it is unknown, revoked or expired', data: { credential: 'wallet_credential', prefix: 'svc_wallet_AbCdEfGh' } });
    expect((await said(bearer(mgmt))).data).toMatchObject({ credential: 'api_key', prefix: mgmt.slice(0, 16) });
    expect((await said(bearer(mgmt))).message).toMatch(/is a management credential or a project API key, which \/mcp does not accept/);
    expect((await said('Bearer svc_oauth_rt_0123456789abcdef')).message).toBe('svc_oauth_rt_01234567… is an OAuth refresh token: exchange it at the token endpoint for an access token');
    expect((await said('Bearer svc_oauth_at_0123456789abcdef')).message).toMatch(/^The OAuth access token svc_oauth_at_01234567… was refused: it is unknown or expired, or its grant was revoked/);
    expect((await said(bearer(await app.identityToken('ursula')))).data).toEqual({ credential: 'other' });
    // A live wallet credential still opens /mcp, as before.
    expect((await mcp(app, bearer(wallet.secret))).status).toBe(200);
  });
});

describe('dynamic client registration (RFC 7591)', () => {
  it('registers a public client: no secret, the metadata echoed', async () => {
    const answer = await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Public one', grant_types: ['authorization_code', 'refresh_token'] });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toMatchObject({ client_name: 'Public one', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] });
    expect(answer.body.client_secret).toBeUndefined();
  });

  it('gives a confidential client (client_secret_basic by default) its secret once and keeps only its keyed hash', async () => {
    const answer = await register(app, { redirect_uris: ['https://app.example.com/cb'] });
    expect(answer.status).toBe(201);
    expect(answer.body.token_endpoint_auth_method).toBe('client_secret_basic');
    expect(answer.body.client_secret).toMatch(/^svc_oauth_cs_[\w-]{43}$/);
    const [row] = await rows<{ secret_hash: string }>(sql`select secret_hash from oauth_clients where id = ${answer.body.client_id}`);
    expect(row!.secret_hash).toBe(app.ctx.hasher.hash(answer.body.client_secret));
    expect(JSON.stringify(await rows(sql`select * from oauth_clients`))).not.toContain(answer.body.client_secret);
  });

  it('refuses redirect URIs that are not https or loopback http, or carry a fragment; grants and methods it does not offer', async () => {
    const refused = async (metadata: Record<string, unknown>, error: string) => {
      const answer = await register(app, metadata);
      expect(answer.status, JSON.stringify(metadata)).toBe(400);
      expect(answer.body.error, JSON.stringify(answer.body)).toBe(error);
    };
    await refused({ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri');
    await refused({ redirect_uris: ['https://app.example.com/cb#x'] }, 'invalid_redirect_uri');
    await refused({ redirect_uris: ['/relative'] }, 'invalid_redirect_uri');
    await refused({ redirect_uris: [] }, 'invalid_redirect_uri');
    await refused({ redirect_uris: [REDIRECT], grant_types: ['client_credentials'] }, 'invalid_client_metadata');
    await refused({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata');
    await refused({ redirect_uris: [REDIRECT], scope: 'admin' }, 'invalid_client_metadata');
  });
});

describe('the authorization endpoint', () => {
  let clientId = '';
  const params = () => ({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1', scope: 'wallet', resource: `${base}/mcp` });
  beforeAll(async () => {
    clientId = (await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Authorizing' })).body.client_id;
  });

  it('sends a good request on to the dashboard’s consent page, every parameter (state included) with it', async () => {
    for (const scope of ['', 'wallet offline_access']) expect((await fetch(authorizeUrl({ ...params(), scope }), { redirect: 'manual' })).headers.get('location')).toMatch(/^\/app\/#\/authorize\?/);
    const request = params();
    const answer = await fetch(authorizeUrl(request), { redirect: 'manual' });
    expect(answer.status).toBe(302);
    const location = answer.headers.get('location')!;
    expect(location.startsWith('/app/#/authorize?')).toBe(true);
    expect(Object.fromEntries(new URLSearchParams(location.split('?')[1]))).toEqual(request);
  });

  it('says an unknown client or an unregistered redirect URI to the user and never redirects (exact match: no trailing slash, no other port)', async () => {
    for (const change of [{ client_id: '00000000-0000-7000-8000-000000000000' }, { redirect_uri: `${REDIRECT}/` }, { redirect_uri: REDIRECT.replace('53682', '53683') }, { redirect_uri: 'https://evil.example/cb' }]) {
      const answer = await fetch(authorizeUrl({ ...params(), ...change }), { redirect: 'manual' });
      expect(answer.status, JSON.stringify(change)).toBe(400);
      expect(answer.headers.get('location')).toBeNull();
      expect(answer.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await answer.text()).toContain('Nothing was granted');
    }
  });

  it('returns the other errors to the client with its state and our issuer: PKCE missing or plain, a wrong resource, scope or response_type', async () => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ resource: 'https://elsewhere.example/mcp' }, 'invalid_target'],
      [{ scope: 'wallet admin' }, 'invalid_scope'],
      [{ scope: 'openid' }, 'invalid_scope'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
    ];
    for (const [change, error] of cases) {
      const request = Object.fromEntries(Object.entries({ ...params(), ...change }).filter(([, v]) => v !== undefined)) as Record<string, string>;
      const answer = await fetch(authorizeUrl(request), { redirect: 'manual' });
      expect(answer.status, JSON.stringify(change)).toBe(302);
      const back = new URL(answer.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
      expect(back.searchParams.get('error'), JSON.stringify(change)).toBe(error);
      expect(back.searchParams.get('state')).toBe('st-1');
      expect(back.searchParams.get('iss')).toBe(base);
    }
  });

  it('the consent route: describes the request to the signed-in user; deny answers access_denied with the state; approve needs the wallet’s own management credential', async () => {
    const identity = await app.identityToken('ursula');
    const request = params();
    const described = await api(app, 'GET', `/v1/oauth/consent?${new URLSearchParams(request)}`, identity);
    expect(described.status).toBe(200);
    expect(described.body.data).toEqual({
      client: { id: clientId, name: 'Authorizing', uri: null },
      redirectUri: REDIRECT,
      redirectHost: '127.0.0.1:53682',
      loopback: true,
      scope: 'wallet',
      resource: `${base}/mcp`,
      asset: { network: max.network, asset: max.asset, symbol: 'USDG', decimals: 6 },
    });
    // The management credential is no identity: the route is the signed-in user's.
    expect((await api(app, 'GET', `/v1/oauth/consent?${new URLSearchParams(request)}`, mgmt)).status).toBe(401);

    const denied = await api(app, 'POST', '/v1/oauth/consent', identity, { request, decision: 'deny' });
    expect(denied.status).toBe(200);
    const back = new URL(denied.body.data.redirectTo);
    expect(Object.fromEntries(back.searchParams)).toEqual({ error: 'access_denied', error_description: 'The user denied the request', state: 'st-1', iss: base });

    const approve = { request, decision: 'approve', walletId: wallet.id, ceiling: '1000' };
    expect((await api(app, 'POST', '/v1/oauth/consent', identity, { ...approve, managementCredential: 'svc_api_not-a-real-one' })).body).toMatchObject({ code: expect.any(Number), message: expect.stringMatching(/management credential is unknown or revoked/) });
    expect((await api(app, 'POST', '/v1/oauth/consent', identity, { ...approve, managementCredential: 'svc_api_not-a-real-one' })).status).toBe(403);
    const otherOwner = await app.mgmtSecret('someone-else');
    expect((await api(app, 'POST', '/v1/oauth/consent', identity, { ...approve, managementCredential: otherOwner })).status).toBe(404);
    expect((await api(app, 'POST', '/v1/oauth/consent', identity, { ...approve, managementCredential: mgmt, ceiling: '0' })).status).toBe(400);
    expect((await api(app, 'POST', '/v1/oauth/consent', identity, { ...approve, request: { ...request, redirect_uri: 'https://evil.example/cb' }, managementCredential: mgmt })).body).toMatchObject({ message: expect.stringMatching(/not one the application registered/), data: { error: 'invalid_request' } });
    expect(Number((await rows<{ n: string }>(sql`select count(*)::text as n from oauth_grants where client_id = ${clientId}`))[0]!.n)).toBe(0);
  });
});

describe('the token endpoint', () => {
  /** A consented request of a new public client, and its PKCE verifier: the code not yet exchanged. */
  async function consented(ceiling = '1000') {
    const clientId = (await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'Exchanging' })).body.client_id as string;
    const { verifier, challenge } = pkce();
    const code = await consent(app, 'ursula', { response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'x' }, { walletId: wallet.id, managementCredential: mgmt, ceiling });
    return { clientId, verifier, code, form: { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: clientId } };
  }

  it('exchanges a code only with its PKCE verifier, redirect URI and client; a refusal does not use the code up', async () => {
    const { form, clientId } = await consented();
    const other = (await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).body.client_id;
    expect((await token(app, { ...form, code_verifier: pkce().verifier })).body).toMatchObject({ error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' });
    expect((await token(app, { ...form, redirect_uri: `${REDIRECT}/` })).body.error).toBe('invalid_grant');
    expect((await token(app, { ...form, client_id: other })).body.error).toBe('invalid_grant');
    expect((await token(app, { ...form, resource: 'https://elsewhere.example/mcp' })).body.error).toBe('invalid_target');
    const { code_verifier: _v, ...withoutVerifier } = form;
    expect((await token(app, withoutVerifier)).body).toMatchObject({ error: 'invalid_request', error_description: 'code_verifier is missing: PKCE is required' });

    const exchanged = await token(app, form);
    expect(exchanged.status).toBe(200);
    expect(exchanged.headers.get('cache-control')).toBe('no-store');
    expect(exchanged.body).toEqual({ access_token: expect.stringMatching(/^svc_oauth_at_/), token_type: 'Bearer', expires_in: 3600, refresh_token: expect.stringMatching(/^svc_oauth_rt_/), scope: 'wallet' });
    const opened = await mcp(app, bearer(exchanged.body.access_token));
    expect(opened.status).toBe(200);
    expect(tool(opened).structuredContent).toMatchObject({ id: wallet.id, address: wallet.address });
    expect(clientId).not.toBe(other);
  });

  it('a code used twice: the second exchange is refused and the grant revoked, so the first one’s tokens stop', async () => {
    const { form } = await consented();
    const first = await token(app, form);
    expect(first.status).toBe(200);
    expect((await mcp(app, bearer(first.body.access_token))).status).toBe(200);
    const again = await token(app, form);
    expect(again.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringMatching(/already used.*grant is revoked/) });
    expect((await mcp(app, bearer(first.body.access_token))).status).toBe(401);
    expect((await token(app, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: form.client_id })).body.error).toBe('invalid_grant');
  });

  it('an expired code is refused', async () => {
    const { form } = await consented();
    await rows(sql`update oauth_codes set expires_at = now() - interval '1 second' where code_hash = ${app.ctx.hasher.hash(form.code)}`);
    expect((await token(app, form)).body).toMatchObject({ error: 'invalid_grant', error_description: 'The authorization code has expired: authorize again' });
  });

  it('rotates refresh tokens; the rotated one presented again revokes the grant (both copies stop)', async () => {
    const { form, clientId } = await consented();
    const first = (await token(app, form)).body;
    const second = await token(app, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId });
    expect(second.status).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(second.body.access_token).not.toBe(first.access_token);
    expect((await mcp(app, bearer(second.body.access_token))).status).toBe(200);

    const reused = await token(app, { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: clientId });
    expect(reused.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringMatching(/refresh token was already used/) });
    expect((await mcp(app, bearer(second.body.access_token))).status).toBe(401);
    expect((await token(app, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token, client_id: clientId })).body).toMatchObject({ error: 'invalid_grant', error_description: 'The grant was revoked: authorize again' });
    const listed = (await api(app, 'GET', '/v1/oauth/grants', await app.identityToken('ursula'))).body.data.find((g: { client: { id: string } }) => g.client.id === clientId);
    expect(listed).toMatchObject({ status: 'revoked', revokedReason: 'refresh_token_reused' });
  });

  it('authenticates a confidential client by HTTP Basic or in the body, and refuses a wrong or missing secret (401 invalid_client)', async () => {
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: wallet.id, ceiling: '1000', confidential: true, redirectUri: 'https://app.example.com/cb' });
    const { clientId, clientSecret } = connection as Required<Connection>;
    const refresh = (extra: Record<string, string>, basic?: [string, string]) => token(app, { grant_type: 'refresh_token', refresh_token: connection.refreshToken, ...extra }, basic);
    const wrong = await refresh({}, [clientId, `${clientSecret}x`]);
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe('invalid_client');
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect((await refresh({ client_id: clientId })).status).toBe(401); // no secret at all
    const byPost = await refresh({ client_id: clientId, client_secret: clientSecret });
    expect(byPost.status).toBe(200);
    expect((await token(app, { grant_type: 'refresh_token', refresh_token: byPost.body.refresh_token }, [clientId, clientSecret])).status).toBe(200);
  });

  it('refuses malformed token requests in OAuth’s shape: repeated parameters, an unknown grant type', async () => {
    const repeated = await fetch(`${base}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token&grant_type=authorization_code' });
    expect(repeated.status).toBe(400);
    expect(await repeated.json()).toEqual({ error: 'invalid_request', error_description: 'Parameter grant_type is repeated' });
    const client = (await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).body.client_id;
    expect((await token(app, { grant_type: 'password', client_id: client })).body.error).toBe('unsupported_grant_type');
  });

  it('keeps codes and tokens only as keyed hashes; an expired access token is refused and named', async () => {
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: wallet.id, ceiling: '1000' });
    const stored = JSON.stringify(await rows(sql`select * from oauth_tokens`)) + JSON.stringify(await rows(sql`select * from oauth_codes`));
    expect(stored).not.toContain(connection.accessToken);
    expect(stored).not.toContain(connection.refreshToken);
    expect(stored).toContain(app.ctx.hasher.hash(connection.accessToken));
    await rows(sql`update oauth_tokens set expires_at = now() - interval '1 second' where token_hash = ${app.ctx.hasher.hash(connection.accessToken)}`);
    const expired = await mcp(app, bearer(connection.accessToken));
    expect(expired.status).toBe(401);
    expect(expired.body.data).toEqual({ credential: 'oauth_access_token', prefix: connection.accessToken.slice(0, 21) });
    expect(expired.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('an access token is for /mcp only: the wallet routes refuse it as they refuse any other unknown credential', async () => {
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: wallet.id, ceiling: '1000' });
    expect((await mcp(app, bearer(connection.accessToken))).status).toBe(200);
    for (const [method, path] of [['GET', '/v1/wallets/me'], ['GET', '/v1/wallets/me/payments'], ['GET', '/v1/wallets'], ['GET', '/v1/projects']] as const) {
      expect((await api(app, method, path, connection.accessToken)).status, path).toBe(401);
    }
    const paid = await api(app, 'POST', '/v1/wallets/me/pay-and-call', connection.accessToken, { url: `${base}/x402-test/ping`, maxPayment: max });
    expect(paid.status).toBe(401);
  });
});

describe('paying with a grant', () => {
  it('pays within the granted ceiling: 250 lets two pings through and refuses the third (ceiling_exceeded, nothing signed, nothing moved)', async () => {
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: wallet.id, ceiling: '250' });
    const [grant] = await rows<{ wallet_credential_id: string }>(sql`select wallet_credential_id from oauth_grants where client_id = ${connection.clientId}`);
    const budget = tool(await mcp(app, bearer(connection.accessToken), 'tools/call', { name: 'get_budget', arguments: {} }));
    expect(budget.structuredContent.ceiling).toEqual({ network: max.network, asset: max.asset, amount: '250', spent: '0', reserved: '0', remaining: '250' });

    const before = await balance(wallet.address);
    for (let i = 0; i < 2; i++) {
      const paid = tool(await payPing(connection.accessToken));
      expect(paid.isError, JSON.stringify(paid)).toBeFalsy();
      expect(paid.structuredContent.payment).toMatchObject({ status: 'pending', amount: '100' });
      await settledPayment(app, wallet.secret, paid.structuredContent.payment);
    }
    expect(await balance(wallet.address)).toBe(before - 2n * PRICE);
    const refused = tool(await payPing(connection.accessToken));
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ reason: 'ceiling_exceeded', rule: 'ceiling', ceiling: { amount: '250', spent: '200', reserved: '0', remaining: '50' } });
    expect(refused.structuredContent.message).toMatch(/would pass this connection's ceiling of 250 \(50 remaining\); nothing was signed/);
    expect(await balance(wallet.address)).toBe(before - 2n * PRICE);
    // Every payment of the grant is recorded under its own wallet credential.
    const recorded = await rows<{ credential_id: string }>(sql`select credential_id from wallet_payments where credential_id = ${grant!.wallet_credential_id}`);
    expect(recorded).toHaveLength(2);
  });

  it('the wallet’s own spend policy still applies under a larger ceiling', async () => {
    const limited = await newWallet('oauth-limited');
    expect((await call(app, 'PUT', `/v1/wallets/${limited.id}/policy`, mgmt, { limits: [{ window: '24h', network: max.network, asset: max.asset, amount: '100' }] })).status).toBe(200);
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: limited.id, ceiling: '100000' });
    expect(tool(await payPing(connection.accessToken)).isError).toBeFalsy();
    const second = tool(await payPing(connection.accessToken));
    expect(second.structuredContent).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
  });

  it('a burst of six concurrent payments under a ceiling of 300 pays exactly three', async () => {
    const burst = await newWallet('oauth-burst');
    const connection = await connect(app, { user: 'ursula', mgmt, walletId: burst.id, ceiling: '300' });
    const before = await balance(burst.address);
    const answers = await Promise.all(Array.from({ length: 6 }, () => payPing(connection.accessToken).then(tool)));
    expect(answers.filter((a) => !a.isError)).toHaveLength(3);
    expect(answers.filter((a) => a.isError).map((a) => a.structuredContent.reason)).toEqual(['ceiling_exceeded', 'ceiling_exceeded', 'ceiling_exceeded']);
    expect(await balance(burst.address)).toBe(before - 3n * PRICE);
  });
});

describe('connected apps', () => {
  it('lists the user’s grants with what each paid; another user sees none and cannot revoke them', async () => {
    const connection = await connect(app, { user: 'vera', mgmt, walletId: wallet.id, ceiling: '500', name: 'Vera’s agent' });
    const paid = tool(await payPing(connection.accessToken));
    expect(paid.isError).toBeFalsy();
    // Reserved until the chain confirms it (after the answer), then spent.
    await settledPayment(app, wallet.secret, paid.structuredContent.payment);
    const listed = await api(app, 'GET', '/v1/oauth/grants', await app.identityToken('vera'));
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({
      status: 'active',
      revokedReason: null,
      client: { id: connection.clientId, name: 'Vera’s agent', redirectHosts: ['127.0.0.1:53682'] },
      wallet: { id: wallet.id, address: wallet.address },
      ceiling: { amount: '500', spent: '100', reserved: '0', remaining: '400' },
      scope: 'wallet',
    });
    expect(listed.body.data[0].lastUsedAt).not.toBeNull();
    const stranger = await app.identityToken('mallory');
    expect((await api(app, 'GET', '/v1/oauth/grants', stranger)).body.data).toEqual([]);
    expect((await api(app, 'DELETE', `/v1/oauth/grants/${listed.body.data[0].id}`, stranger)).status).toBe(404);
    expect((await mcp(app, bearer(connection.accessToken))).status).toBe(200);
  });

  it('revoking a grant: its access token is refused at the next request, its refresh token too, and the wallet’s owner sees its credential revoked', async () => {
    const connection = await connect(app, { user: 'vera', mgmt, walletId: wallet.id, ceiling: '500', name: 'To revoke' });
    expect((await mcp(app, bearer(connection.accessToken))).status).toBe(200);
    const identity = await app.identityToken('vera');
    const grant = (await api(app, 'GET', '/v1/oauth/grants', identity)).body.data.find((g: { client: { id: string } }) => g.client.id === connection.clientId);
    const started = Date.now();
    const revoked = await api(app, 'DELETE', `/v1/oauth/grants/${grant.id}`, identity);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ status: 'revoked', revokedReason: 'user' });
    const refused = await mcp(app, bearer(connection.accessToken));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(refused.status).toBe(401);
    expect(refused.body.data.credential).toBe('oauth_access_token');
    expect((await token(app, { grant_type: 'refresh_token', refresh_token: connection.refreshToken, client_id: connection.clientId })).body.error).toBe('invalid_grant');
    const credentials = (await call(app, 'GET', `/v1/wallets/${wallet.id}/credentials`, mgmt)).body.data as Array<{ id: string; name: string; status: string }>;
    expect(credentials.find((c) => c.id === grant.walletCredentialId)).toMatchObject({ name: 'OAuth: To revoke', status: 'revoked' });
    // Revoking again answers it as it is.
    expect((await api(app, 'DELETE', `/v1/oauth/grants/${grant.id}`, identity)).body.data.status).toBe('revoked');
  });

  it('the wallet’s owner revoking the grant’s wallet credential stops the grant too', async () => {
    const connection = await connect(app, { user: 'vera', mgmt, walletId: wallet.id, ceiling: '500', name: 'Owner revokes' });
    const identity = await app.identityToken('vera');
    const grant = (await api(app, 'GET', '/v1/oauth/grants', identity)).body.data.find((g: { client: { id: string } }) => g.client.id === connection.clientId);
    expect((await call(app, 'DELETE', `/v1/wallets/${wallet.id}/credentials/${grant.walletCredentialId}`, mgmt)).status).toBe(200);
    expect((await mcp(app, bearer(connection.accessToken))).status).toBe(401);
    const after = (await api(app, 'GET', '/v1/oauth/grants', identity)).body.data.find((g: { id: string }) => g.id === grant.id);
    expect(after).toMatchObject({ status: 'revoked', revokedReason: 'wallet_credential_revoked' });
  });
});
