import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, waitFor } from './helpers.js';

let app: TestApp;
let mgmtA: string;
let mgmtB: string;

beforeAll(async () => {
  app = await buildWalletsApp();
  mgmtA = await app.mgmtSecret('app-a');
  mgmtB = await app.mgmtSecret('app-b');
});
afterAll(async () => {
  await app?.close();
});

describe('wallet create', () => {
  it('creates an active wallet and returns its first credential once (201)', async () => {
    const created = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-1', name: 'Alice', metadata: { tier: 'gold', seats: 3, beta: true } });
    expect(created.status).toBe(201);
    expect(created.body.code).toBe(0);
    const { created: isNew, wallet, credential } = created.body.data;
    expect(isNew).toBe(true);
    expect(wallet).toMatchObject({ externalId: 'user-1', name: 'Alice', provider: 'local', chainType: 'ethereum', status: 'active', lastError: null, metadata: { tier: 'gold', seats: 3, beta: true } });
    expect(wallet.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(Object.keys(wallet)).not.toContain('keyRef');
    expect(credential).toMatchObject({ name: 'default', status: 'active', lastUsedAt: null, expiresAt: null });
    expect(credential.secret).toMatch(/^svc_wallet_/);
    expect(credential.secret.startsWith(credential.prefix)).toBe(true);
  });

  it('is idempotent by externalId: 200, created false, credential null, same wallet', async () => {
    const first = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-2', name: 'Bob' });
    const again = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-2', name: 'Bob renamed', chainType: 'ethereum' });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual({ created: false, wallet: first.body.data.wallet, credential: null });
  });

  it('refuses an externalId reused with another chainType (409) and an unsupported chainType (400)', async () => {
    await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-3', name: 'Carol' });
    const other = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-3', name: 'Carol', chainType: 'solana' });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 1005, data: { chainType: 'ethereum' } });
    const unsupported = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'user-4', name: 'Dan', chainType: 'solana' });
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.code).toBe(1000);
  });

  it('answers concurrent creates of one externalId with one 201 and 200s for the rest', async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'racy', name: 'Racy' })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.data.wallet.id)).size).toBe(1);
  });

  it.each([
    ['an empty externalId', { externalId: '', name: 'x' }],
    ['a 201-char externalId', { externalId: 'x'.repeat(201), name: 'x' }],
    ['a missing name', { externalId: 'v1' }],
    ['a 201-char name', { externalId: 'v2', name: 'x'.repeat(201) }],
    ['nested metadata', { externalId: 'v3', name: 'x', metadata: { nested: { a: 1 } } }],
    ['null metadata values', { externalId: 'v4', name: 'x', metadata: { a: null } }],
    ['metadata over 16 KiB', { externalId: 'v5', name: 'x', metadata: { big: 'x'.repeat(16 * 1024) } }],
  ])('refuses %s with 400', async (_label, body) => {
    const response = await call(app, 'POST', '/v1/wallets', mgmtA, body);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe(1000);
  });

  it('accepts 200-char fields', async () => {
    const response = await call(app, 'POST', '/v1/wallets', mgmtA, { externalId: 'e'.repeat(200), name: 'n'.repeat(200) });
    expect(response.status).toBe(201);
  });
});

describe('wallet reads and the application boundary', () => {
  it('lists only the caller’s wallets, newest first', async () => {
    const b1 = await createWallet(app, mgmtB, 'b-1');
    const b2 = await createWallet(app, mgmtB, 'b-2');
    const listB = await call(app, 'GET', '/v1/wallets', mgmtB);
    expect(listB.status).toBe(200);
    expect(listB.body.data.map((w: { id: string }) => w.id)).toEqual([b2.wallet.id, b1.wallet.id]);
    const listA = await call(app, 'GET', '/v1/wallets', mgmtA);
    expect(listA.body.data.map((w: { id: string }) => w.id)).not.toContain(b1.wallet.id);
    const created = listA.body.data.map((w: { createdAt: string }) => w.createdAt);
    expect([...created].sort().reverse()).toEqual(created);
  });

  it('answers 404 for another application’s wallet, an unknown id and a malformed id', async () => {
    const { wallet } = await createWallet(app, mgmtA, 'a-private');
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmtA)).status).toBe(200);
    for (const url of [`/v1/wallets/${wallet.id}`, `/v1/wallets/${wallet.id}/credentials`]) {
      const response = await call(app, 'GET', url, mgmtB);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe(1004);
    }
    expect((await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmtB, { name: 'steal' })).status).toBe(404);
    expect((await call(app, 'GET', '/v1/wallets/00000000-0000-7000-8000-000000000000', mgmtA)).status).toBe(404);
    expect((await call(app, 'GET', '/v1/wallets/not-a-uuid', mgmtA)).status).toBe(404);
  });

  it('lets the same externalId exist once per application', async () => {
    const a = await createWallet(app, mgmtA, 'shared-id');
    const b = await createWallet(app, mgmtB, 'shared-id');
    expect(a.wallet.id).not.toBe(b.wallet.id);
  });
});

describe('wallet credentials', () => {
  it('creates (201, secret once), lists newest first without secrets, and revokes at once', async () => {
    const { wallet, secret: first } = await createWallet(app, mgmtA, 'creds');
    const made = await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmtA, { name: 'runtime', expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    expect(made.status).toBe(201);
    expect(made.body.data.secret).toMatch(/^svc_wallet_/);
    const list = await call(app, 'GET', `/v1/wallets/${wallet.id}/credentials`, mgmtA);
    expect(list.body.data.map((c: { name: string }) => c.name)).toEqual(['runtime', 'default']);
    for (const c of list.body.data) expect(c).not.toHaveProperty('secret');

    const me = await call(app, 'GET', '/v1/wallets/me', made.body.data.secret);
    expect(me.status).toBe(200);
    expect(me.body.data.id).toBe(wallet.id);

    const revoked = await call(app, 'DELETE', `/v1/wallets/${wallet.id}/credentials/${made.body.data.id}`, mgmtA);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ id: made.body.data.id, status: 'revoked' });
    expect((await call(app, 'GET', '/v1/wallets/me', made.body.data.secret)).status).toBe(401);
    // Revoking again is a no-op; the wallet's other credential still works.
    expect((await call(app, 'DELETE', `/v1/wallets/${wallet.id}/credentials/${made.body.data.id}`, mgmtA)).body.data.status).toBe('revoked');
    expect((await call(app, 'GET', '/v1/wallets/me', first)).status).toBe(200);
  });

  it('answers 404 when revoking outside the boundary', async () => {
    const { wallet, credential } = await createWallet(app, mgmtA, 'creds-404');
    const other = await createWallet(app, mgmtA, 'creds-404-other');
    expect((await call(app, 'DELETE', `/v1/wallets/${wallet.id}/credentials/${credential.id}`, mgmtB)).status).toBe(404);
    expect((await call(app, 'DELETE', `/v1/wallets/${other.wallet.id}/credentials/${credential.id}`, mgmtA)).status).toBe(404);
    expect((await call(app, 'DELETE', `/v1/wallets/${wallet.id}/credentials/nope`, mgmtA)).status).toBe(404);
  });

  it('validates name and a future expiresAt', async () => {
    const { wallet } = await createWallet(app, mgmtA, 'creds-400');
    for (const body of [{ name: '' }, { name: 'x'.repeat(101) }, { name: 'x', expiresAt: 'tomorrow' }, { name: 'x', expiresAt: new Date(Date.now() - 1000).toISOString() }]) {
      expect((await call(app, 'POST', `/v1/wallets/${wallet.id}/credentials`, mgmtA, body)).status).toBe(400);
    }
  });

  it('keeps lastUsedAt fresh after use', async () => {
    const { wallet, secret } = await createWallet(app, mgmtA, 'touch');
    expect((await call(app, 'GET', '/v1/wallets/me', secret)).status).toBe(200);
    const used = await waitFor(async () => {
      const list = await call(app, 'GET', `/v1/wallets/${wallet.id}/credentials`, mgmtA);
      return list.body.data[0].lastUsedAt as string | null;
    });
    expect(Date.parse(used)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('keeps each credential on its side: wallet credential refused on management routes and vice versa', async () => {
    const { wallet, secret } = await createWallet(app, mgmtA, 'sides');
    for (const [method, url] of [['GET', '/v1/wallets'], ['POST', '/v1/wallets'], ['GET', `/v1/wallets/${wallet.id}`], ['GET', `/v1/wallets/${wallet.id}/credentials`]] as const) {
      const response = await call(app, method, url, secret, method === 'POST' ? { externalId: 'x', name: 'x' } : undefined);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ code: 1001, message: 'Missing or invalid credentials', data: null });
    }
    expect((await call(app, 'GET', '/v1/wallets/me', mgmtA)).status).toBe(401);
    expect((await call(app, 'GET', '/v1/wallets/me/payments', mgmtA)).status).toBe(401);
    expect((await call(app, 'POST', '/v1/wallets/me/pay-and-call', mgmtA, { url: 'https://example.com', maxPayment: { network: 'eip155:4663', asset: `0x${'1'.repeat(40)}`, amount: '1' } })).status).toBe(401);
  });
});

describe('storage', () => {
  it('keeps only keyed hashes of credentials and sealed keys', async () => {
    const { wallet, secret } = await createWallet(app, mgmtA, 'storage');
    const [cred] = await app.ctx.database.query<{ secret_hash: string }>(sql`select secret_hash from wallet_credentials where wallet_id = ${wallet.id}`);
    expect(cred.secret_hash).toBe(app.ctx.hasher.hash(secret));
    const [row] = await app.ctx.database.query<{ key_ref: string }>(sql`select key_ref from wallets where id = ${wallet.id}`);
    expect(row.key_ref).toMatch(/^v1\.[0-9a-f]{16}\.[\w-]+\.[\w-]+\.[\w-]+$/);
    const response = JSON.stringify(await call(app, 'GET', `/v1/wallets/${wallet.id}`, mgmtA));
    expect(response).not.toContain(row.key_ref.split('.')[4]);
  });
});

describe('OpenAPI', () => {
  it('documents every wallet route from the zod schemas', async () => {
    const spec = (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json();
    const paths = Object.keys(spec.paths).filter((p) => p.startsWith('/v1/wallets'));
    expect(paths.sort()).toEqual(
      [
        '/v1/wallets',
        '/v1/wallets/me',
        '/v1/wallets/me/budget',
        '/v1/wallets/me/channels',
        '/v1/wallets/me/channels/{channelId}',
        '/v1/wallets/me/channels/{channelId}/close',
        '/v1/wallets/me/channels/{channelId}/deposits',
        '/v1/wallets/me/pay-and-call',
        '/v1/wallets/me/payments',
        '/v1/wallets/me/permit2-approval',
        '/v1/wallets/me/policy',
        '/v1/wallets/{walletId}',
        '/v1/wallets/{walletId}/approval-events',
        '/v1/wallets/{walletId}/approvals',
        '/v1/wallets/{walletId}/approvals/{approvalId}/approve',
        '/v1/wallets/{walletId}/approvals/{approvalId}/deny',
        '/v1/wallets/{walletId}/balance',
        '/v1/wallets/{walletId}/budget',
        '/v1/wallets/{walletId}/credentials',
        '/v1/wallets/{walletId}/credentials/{credentialId}',
        '/v1/wallets/{walletId}/payments',
        '/v1/wallets/{walletId}/policy',
      ].sort(),
    );
    const pay = spec.paths['/v1/wallets/me/pay-and-call'].post;
    // 202: the spend policy asks a human first (extension).
    expect(Object.keys(pay.responses).sort()).toEqual(['200', '202', '400', '401', '409', '413', '502', '504']);
    expect(pay.requestBody.content['application/json'].schema.properties.maxPayment.required).toEqual(['network', 'asset', 'amount']);
    // The approval-events queue: named with a key of its project (extension).
    const events = spec.paths['/v1/wallets/{walletId}/approval-events'];
    expect(Object.keys(events).sort()).toEqual(['get', 'put']);
    expect(JSON.stringify(events.put.requestBody.content['application/json'].schema)).toContain('projectApiKey');
  });
});
