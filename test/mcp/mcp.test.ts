import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, freePort, settledPayment, type PaidPayment } from '../wallets/helpers.js';

// The MCP server end to end: the official TypeScript client over Streamable HTTP against the api origin's real
// listener, on the devchain. The wallet pays the app's own /x402-test/ping (100 atomic USDG) under a policy its
// management credential sets; balances are read from the chain, payments from the wallet's table.

const PRICE = 100n;
let app: TestApp;
let mgmt: string;
let walletId: string;
let address: Address;
let secret: string;
let ping: string;
let max: { network: string; asset: string; amount: string };
let client: Client;

const balance = () => app.ctx.chain.devchain!.balanceOf(address);
const paymentRows = async () => Number((await app.ctx.database.query<{ n: string }>(sql`select count(*)::text as n from wallet_payments where wallet_id = ${walletId}`))[0]!.n);
const setPolicy = async (policy: Record<string, unknown>) => {
  const answer = await app.origins.api!.inject({ method: 'PUT', url: `/v1/wallets/${walletId}/policy`, headers: { authorization: `Bearer ${mgmt}` }, payload: policy });
  expect(answer.statusCode, answer.body).toBe(200);
};
const tool = async (name: string, args: Record<string, unknown> = {}, on = client) => (await on.callTool({ name, arguments: args })) as CallToolResult;
const payPing = (extra: Record<string, unknown> = {}) => tool('pay_and_call', { url: ping, maxPayment: max, ...extra });
const text = (result: CallToolResult) => result.content.map((part) => (part.type === 'text' ? part.text : '')).join('\n');

/** A connected client of the official SDK, with the tools listed (the client checks results against their outputSchema). */
async function connect(credential: string): Promise<Client> {
  const connected = new Client({ name: 'tollgate-test', version: '1.0.0' });
  await connected.connect(new StreamableHTTPClientTransport(new URL(`${app.urls.api}/mcp`), { requestInit: { headers: { authorization: `Bearer ${credential}` } } }));
  await connected.listTools();
  return connected;
}

/** One raw JSON-RPC request to /mcp, as any HTTP client can send it. */
const rpc = (headers: Record<string, string>, method: string, params: Record<string, unknown>) =>
  fetch(`${app.urls.api}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
const initialize = (headers: Record<string, string>) => rpc(headers, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });

beforeAll(async () => {
  // The API's port is fixed up front so exactly its loopback origin can be allow-listed for http.
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  ping = `${app.urls.api}/x402-test/ping`;
  max = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' };
  mgmt = await app.mgmtSecret('mcp');
  const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'mcp-agent', name: 'MCP agent' });
  expect(created.status).toBe(201);
  ({ id: walletId, address } = created.body.data.wallet);
  secret = created.body.data.credential.secret;
  await app.ctx.chain.devchain!.fund(address, '1');
  client = await connect(secret);
});
afterAll(async () => {
  await client?.close();
  await app?.close();
});

describe('the MCP server of a wallet', () => {
  it('lists get_wallet, get_budget, pay_and_call and list_payments, each with an input and an output schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['get_budget', 'get_wallet', 'list_payments', 'pay_and_call']);
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.outputSchema?.type, t.name).toBe('object');
      // Each output schema names its result and the refusal, so a validating client accepts both.
      const shapes = (t.outputSchema as { anyOf?: Array<{ required?: string[] }> }).anyOf ?? [];
      expect(shapes.length, t.name).toBeGreaterThanOrEqual(2);
      expect(shapes.at(-1)?.required, t.name).toEqual(['reason', 'message']);
    }
    const pay = tools.find((t) => t.name === 'pay_and_call')!;
    expect(Object.keys(pay.inputSchema.properties ?? {}).sort()).toEqual(['approvalId', 'body', 'headers', 'idempotencyKey', 'maxPayment', 'method', 'url']);
    expect(pay.inputSchema.required).toEqual(['url', 'maxPayment']);
    const payments = tools.find((t) => t.name === 'list_payments')!;
    expect(Object.keys(payments.inputSchema.properties ?? {}).sort()).toEqual(['before', 'limit']);
  });

  it('get_wallet: the address, status and the USDG balance the chain holds', async () => {
    const result = await tool('get_wallet');
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ id: walletId, address, status: 'active' });
    expect(result.structuredContent!.balance).toEqual({ network: 'eip155:4663', asset: max.asset, symbol: 'USDG', decimals: 6, amount: String(await balance()) });
    expect(await balance()).toBe(1_000_000n);
    expect(JSON.parse(text(result))).toEqual(result.structuredContent);
  });

  it('get_budget: the limit the management credential set, nothing spent yet', async () => {
    await setPolicy({ limits: [{ window: '24h', network: max.network, asset: max.asset, amount: '200' }] });
    const result = await tool('get_budget');
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent!.budget).toEqual([{ window: '24h', network: max.network, asset: max.asset, amount: '200', spent: '0', reserved: '0', remaining: '200', nextReleaseAt: null }]);
    expect(result.structuredContent!.policy).toMatchObject({ walletId, limits: [{ window: '24h', amount: '200' }] });
  });

  it('pay_and_call pays the ping twice: each answered pending then settled on chain, 100 each, listed by list_payments', async () => {
    const paid: string[] = [];
    for (let i = 0; i < 2; i++) {
      const before = await balance();
      const result = await payPing();
      expect(result.isError, text(result)).toBeFalsy();
      expect(result.structuredContent!.upstream).toMatchObject({ status: 200, body: { message: 'paid pong' }, bodyEncoding: 'json' });
      expect(result.structuredContent!.payment).toMatchObject({ status: 'pending', network: max.network, asset: max.asset, amount: '100' });
      const settled = await settledPayment(app, secret, result.structuredContent!.payment as PaidPayment);
      expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await balance()).toBe(before - PRICE);
      paid.push((result.structuredContent!.payment as { id: string }).id);
    }
    const listed = await tool('list_payments', { limit: 10 });
    expect(listed.isError).toBeFalsy();
    expect((listed.structuredContent!.payments as Array<{ id: string; status: string }>).map((p) => [p.id, p.status])).toEqual([
      [paid[1], 'settled'],
      [paid[0], 'settled'],
    ]);
    const budget = await tool('get_budget');
    expect(budget.structuredContent!.budget).toMatchObject([{ spent: '200', reserved: '0', remaining: '0' }]);
  });

  it('refuses the third past the 24h limit: a tool error with { reason, rule }, nothing signed, nothing moved', async () => {
    const [before, rows] = [await balance(), await paymentRows()];
    const result = await payPing();
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
    expect(text(result)).toMatch(/limit of 200.*nothing was signed/);
    expect(await balance()).toBe(before);
    expect(await paymentRows()).toBe(rows);
  });

  it('says other refusals by their code: requirements above maxPayment are payment_requirements_rejected, with the offers', async () => {
    await setPolicy({});
    const [before, rows] = [await balance(), await paymentRows()];
    const result = await payPing({ maxPayment: { ...max, amount: '99' } });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ reason: 'payment_requirements_rejected', accepts: [expect.objectContaining({ amount: '100' })] });
    expect(await balance()).toBe(before);
    expect(await paymentRows()).toBe(rows);
  });

  it('returns an approval as a pending result, not an error; once approved, the same call with approvalId pays', async () => {
    await setPolicy({ approvalAbove: { network: max.network, asset: max.asset, amount: '50' } });
    const [before, rows] = [await balance(), await paymentRows()];
    const pending = await payPing();
    expect(pending.isError).toBeFalsy();
    expect(pending.structuredContent).toMatchObject({ status: 'approval_pending', approval: { status: 'pending', amount: '100', url: ping, walletId } });
    const approvalId = (pending.structuredContent!.approval as { id: string }).id;
    expect(text(pending)).toContain(`"approvalId": "${approvalId}"`);
    expect(await balance()).toBe(before);
    expect(await paymentRows()).toBe(rows);

    const approved = await call(app, 'POST', `/v1/wallets/${walletId}/approvals/${approvalId}/approve`, mgmt);
    expect(approved.status).toBe(200);
    const paid = await payPing({ approvalId });
    expect(paid.isError, text(paid)).toBeFalsy();
    expect(paid.structuredContent!.payment).toMatchObject({ status: 'pending', amount: '100' });
    await settledPayment(app, secret, paid.structuredContent!.payment as PaidPayment);
    expect(await balance()).toBe(before - PRICE);
  });

  it('pay_and_call with an idempotencyKey: a retry answers the first result and pays nothing more; another call under the key is refused', async () => {
    await setPolicy({});
    const [before, rows] = [await balance(), await paymentRows()];
    const idempotencyKey = `mcp-retry-${Date.now()}`;
    const first = await payPing({ idempotencyKey });
    expect(first.isError, text(first)).toBeFalsy();
    expect(first.structuredContent!.payment).toMatchObject({ status: 'pending', amount: '100' });
    await settledPayment(app, secret, first.structuredContent!.payment as PaidPayment);
    const retry = await payPing({ idempotencyKey });
    expect(retry.structuredContent).toEqual(first.structuredContent);
    const other = await payPing({ idempotencyKey, maxPayment: { ...max, amount: '150' } });
    expect(other.isError).toBe(true);
    expect(other.structuredContent).toMatchObject({ reason: 'idempotency_conflict' });
    expect(await balance()).toBe(before - PRICE);
    expect(await paymentRows()).toBe(rows + 1);
  });

  it('refuses a management credential and no credential (401); GET and DELETE are 405', async () => {
    const asMgmt = await initialize({ authorization: `Bearer ${mgmt}` });
    expect(asMgmt.status).toBe(401);
    // Which credential was refused, and where an OAuth client finds the authorization server (docs/mcp.md#oauth).
    expect(await asMgmt.json()).toMatchObject({ code: 1001, message: expect.stringMatching(/is a management credential or a project API key, which \/mcp does not accept/), data: { credential: 'api_key' } });
    expect(asMgmt.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
    expect((await initialize({})).status).toBe(401);
    await expect(connect(mgmt)).rejects.toMatchObject({ code: 401 });
    expect((await initialize({ authorization: `Bearer ${secret}` })).status).toBe(200);

    for (const method of ['GET', 'DELETE']) {
      const answer = await fetch(`${app.urls.api}/mcp`, { method, headers: { authorization: `Bearer ${secret}`, accept: 'text/event-stream' } });
      expect(answer.status, method).toBe(405);
      expect(((await answer.json()) as { error: { code: number } }).error.code, method).toBe(-32000);
      expect((await fetch(`${app.urls.api}/mcp`, { method })).status, method).toBe(401);
    }
  });

  it('refuses a revoked wallet credential (401); another wallet\'s credential sees only its own wallet', async () => {
    const made = await call(app, 'POST', `/v1/wallets/${walletId}/credentials`, mgmt, { name: 'to-revoke' });
    expect((await initialize({ authorization: `Bearer ${made.body.data.secret}` })).status).toBe(200);
    expect((await call(app, 'DELETE', `/v1/wallets/${walletId}/credentials/${made.body.data.id}`, mgmt)).body.data.status).toBe('revoked');
    expect((await initialize({ authorization: `Bearer ${made.body.data.secret}` })).status).toBe(401);

    const other = await call(app, 'POST', '/v1/wallets', mgmt, { externalId: 'mcp-other', name: 'Other agent' });
    const otherClient = await connect(other.body.data.credential.secret);
    try {
      const [own, payments] = [await tool('get_wallet', {}, otherClient), await tool('list_payments', {}, otherClient)];
      expect(own.structuredContent).toMatchObject({ id: other.body.data.wallet.id, address: other.body.data.wallet.address });
      expect(own.structuredContent!.address).not.toBe(address);
      expect(payments.structuredContent).toEqual({ payments: [] });
    } finally {
      await otherClient.close();
    }
  });

  it('answers a lone tools/call in plain JSON, no session needed, with the request id', async () => {
    const answer = await rpc({ authorization: `Bearer ${secret}` }, 'tools/call', { name: 'get_wallet', arguments: {} });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.headers.get('x-request-id')).toMatch(/^[\w.:-]+$/);
    const body = (await answer.json()) as { result: CallToolResult };
    expect(body.result.structuredContent).toMatchObject({ id: walletId, address });
  });

  it('stays out of the OpenAPI document', async () => {
    const spec = (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(Object.keys(spec.paths)).toContain('/v1/wallets/me/pay-and-call');
    expect(Object.keys(spec.paths)).not.toContain('/mcp');
  });
});
