// A revoked grant on every api node (issue 44's "Must show"): two `tollgate serve --roles api` processes on one
// PostgreSQL database, as one service (same pepper, same wallet master key, same public URL). A grant is made through
// node 1 (its consent route, then its token endpoint); its access token opens /mcp on both nodes; the grant is revoked
// through node 1; the very next request with it on each node is a 401, well within a second of the revocation's
// answer, because every node reads the grant from the database on every request (no cache to wait out). Then a
// refresh on node 2 is refused too. PostgreSQL only: PGlite is one process per data dir, so there is no cluster.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generatePrivateKey } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { Devchain } from '../../src/chain/devchain.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort, NodeProcesses } from '../helpers/cluster-nodes.js';
import { pkce } from './helpers.js';

const NODES = 2;
const processes = new NodeProcesses();
const dirs: string[] = [];
let chain: Devchain;
let testDb: TestDatabase;
const nodes: Array<{ api: string; dataDir: string }> = [];

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
const bearerJson = (token: string, body?: unknown): RequestInit => ({
  headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
  ...(body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) }),
});
const mcp = (node: { api: string }, accessToken: string) =>
  fetch(`${node.api}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_wallet', arguments: {} } }),
  });

describe.skipIf(!process.env.DATABASE_URL)('a revoked grant across api nodes (PostgreSQL)', () => {
  beforeAll(async () => {
    chain = new Devchain({ dataDir: null, port: 0 });
    await chain.start();
    testDb = await openTestDatabase();
    const ports = await Promise.all(Array.from({ length: NODES }, () => freePort()));
    const shared = {
      SECRET_PEPPER: randomBytes(32).toString('hex'),
      WALLET_MASTER_KEY: randomBytes(32).toString('hex'),
      ATTESTATION_PRIVATE_KEY: generatePrivateKey(),
      ALLOW_DEV_KEYS: '1',
      DATABASE_URL: testDb.url!,
      DATABASE_POOL_SIZE: '4',
      CHAIN_RPC_URL: chain.rpcUrl,
      // One service behind one name: the resource every token is for.
      PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}`,
      FACILITATOR_PORT: '0',
      RELAY_PORT: '0',
      ASSETS_PORT: '0',
      LOG_LEVEL: 'warn',
    };
    await Promise.all(
      ports.map(async (port, i) => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tollgate-oauth-${i + 1}-`));
        dirs.push(dataDir);
        await processes.serve({ label: `api ${i + 1}`, env: { ...shared, TOLLGATE_DATA_DIR: dataDir, API_PORT: String(port) }, roles: ['api'] });
        nodes[i] = { api: `http://127.0.0.1:${port}`, dataDir };
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await processes.stopAll();
    await chain?.stop();
    await testDb?.close();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('the token opens /mcp on both nodes; once the grant is revoked on node 1, the next request on each node is a 401 within a second', { timeout: 60_000 }, async () => {
    const [one, two] = nodes as [{ api: string; dataDir: string }, { api: string; dataDir: string }];
    const { secret: mgmt } = (await callAdminSocket(one.dataDir, 'mgmt-credential.create', { name: 'cluster-owner' })) as { secret: string };
    const { token: identity } = (await callAdminSocket(one.dataDir, 'dev.token', { sub: 'cluster-user' })) as { token: string };
    const wallet = await json(`${one.api}/v1/wallets`, bearerJson(mgmt, { externalId: 'cluster-oauth', name: 'Cluster wallet' }));
    expect(wallet.status, JSON.stringify(wallet.body)).toBe(201);

    const redirectUri = 'http://127.0.0.1:53682/callback';
    const client = await json(`${two.api}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'Cluster agent' }) });
    expect(client.status).toBe(201);
    const { verifier, challenge } = pkce();
    const request = { response_type: 'code', client_id: client.body.client_id, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: 's', resource: `${one.api}/mcp` };
    const consented = await json(`${one.api}/v1/oauth/consent`, bearerJson(identity, { request, decision: 'approve', walletId: wallet.body.data.wallet.id, managementCredential: mgmt, ceiling: '1000' }));
    expect(consented.status, JSON.stringify(consented.body)).toBe(200);
    const code = new URL(consented.body.data.redirectTo).searchParams.get('code')!;
    // The code is exchanged on the other node: every node reads the same tables.
    const tokens = await json(`${two.api}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, client_id: client.body.client_id }) });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    for (const node of [one, two]) expect((await mcp(node, tokens.body.access_token)).status, node.api).toBe(200);

    const grants = await json(`${one.api}/v1/oauth/grants`, bearerJson(identity));
    const grantId = grants.body.data[0].id as string;
    const revoked = await fetch(`${one.api}/v1/oauth/grants/${grantId}`, { method: 'DELETE', headers: { authorization: `Bearer ${identity}` } });
    expect(revoked.status).toBe(200);
    const answeredAt = Date.now();
    const after = await Promise.all(
      [one, two].map(async (node) => {
        const answer = await mcp(node, tokens.body.access_token);
        return { node: node.api, status: answer.status, ms: Date.now() - answeredAt, credential: ((await answer.json()) as { data: { credential: string } }).data.credential };
      }),
    );
    for (const seen of after) {
      expect(seen, JSON.stringify(after)).toMatchObject({ status: 401, credential: 'oauth_access_token' });
      expect(seen.ms, JSON.stringify(after)).toBeLessThan(1000);
    }
    const refreshed = await json(`${two.api}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: client.body.client_id }) });
    expect(refreshed.body.error).toBe('invalid_grant');
  });
});
