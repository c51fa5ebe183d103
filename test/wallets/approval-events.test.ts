// Approval events of a wallet owned through a management credential (issue 44 item 6): the management credential
// names one event queue of a project, proving the right to publish into it with an API key of that project, and
// each new approval request of the wallet's spend policy is published there, so a person can be paged. The
// attackers: another application (management credential), the wallet's own credential, a key of another
// project, a revoked key, a management credential passed off as a project key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ASSET } from '../../src/chain/registry.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, freePort } from './helpers.js';

let app: TestApp;
let mgmt: string;
let owner: string;
let ping: string;
const usdg = (amount: number) => ({ network: DEFAULT_ASSET.network, asset: DEFAULT_ASSET.address, amount: String(amount) });

let wallets = 0;
/** A funded wallet whose policy asks a human above 50 atomic units (the ping costs 100). */
async function approvingWallet() {
  const { wallet, secret } = await createWallet(app, mgmt, `approval-events-${++wallets}`);
  await app.ctx.chain.devchain!.fund(wallet.address, '1');
  expect((await call(app, 'PUT', `/v1/wallets/${wallet.id}/policy`, mgmt, { approvalAbove: usdg(50) })).status).toBe(200);
  return { id: wallet.id as string, address: wallet.address as `0x${string}`, secret };
}
const pay = (secret: string, url = ping) => call(app, 'POST', '/v1/wallets/me/pay-and-call', secret, { url, maxPayment: usdg(100) });

/** A project of `owner` with its first API key and one event queue. */
async function projectWithQueue(name: string, as = owner) {
  const created = (await call(app, 'POST', '/v1/projects', as, { name })).body.data;
  const key = created.apiKey.secret as string;
  const queue = (await call(app, 'POST', '/v1/event-queues', key, { name: `${name}-approvals` })).body.data;
  return { projectId: created.project.id as string, keyId: created.apiKey.id as string, key, queueId: queue.id as string };
}
const claim = (project: { key: string; queueId: string }) => call(app, 'POST', `/v1/event-queues/${project.queueId}/claim`, project.key, {});
const route = (walletId: string) => `/v1/wallets/${walletId}/approval-events`;

beforeAll(async () => {
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort}` } });
  ping = `${app.urls.api}/x402-test/ping`;
  mgmt = await app.mgmtSecret('approval-events');
  owner = await app.identityToken('pager-owner');
});
afterAll(async () => {
  await app?.close();
});

describe("a managed wallet's approval events", () => {
  it('publishes each new approval request into the queue named with a key of its project, once per approval; null stops them', async () => {
    const wallet = await approvingWallet();
    const project = await projectWithQueue('pager');
    expect((await call(app, 'GET', route(wallet.id), mgmt)).body.data).toBeNull();
    const target = { projectId: project.projectId, queueId: project.queueId };
    const set = await call(app, 'PUT', route(wallet.id), mgmt, { ...target, projectApiKey: project.key });
    expect([set.status, set.body.data]).toEqual([200, target]);
    expect((await call(app, 'GET', route(wallet.id), mgmt)).body.data).toEqual(target);

    const start = await app.ctx.chain.devchain!.balanceOf(wallet.address);
    const asked = await pay(wallet.secret);
    expect(asked.status).toBe(202);
    const approval = asked.body.data.approval;
    const claimed = (await claim(project)).body.data;
    expect(claimed.event.payload).toEqual({ type: 'wallet_approval.requested', approvalId: approval.id, walletId: wallet.id, approval });
    // The same call again waits on the same approval: no second event.
    expect((await pay(wallet.secret)).body.data.approval.id).toBe(approval.id);
    expect((await claim(project)).body.data).toBeNull();
    expect(await app.ctx.chain.devchain!.balanceOf(wallet.address)).toBe(start);

    // Stopped: the next approval publishes nothing.
    expect((await call(app, 'PUT', route(wallet.id), mgmt, null)).body.data).toBeNull();
    expect((await call(app, 'GET', route(wallet.id), mgmt)).body.data).toBeNull();
    expect((await pay(wallet.secret, `${ping}?next`)).status).toBe(202);
    expect((await claim(project)).body.data).toBeNull();
  });

  it('refuses every proof that is not an active key of the queue\'s project with 404, and names nothing then', async () => {
    const wallet = await approvingWallet();
    const project = await projectWithQueue('mine');
    const other = await projectWithQueue('other-team', await app.identityToken('other-owner'));
    const put = (body: Record<string, unknown>) => call(app, 'PUT', route(wallet.id), mgmt, { projectId: project.projectId, queueId: project.queueId, projectApiKey: project.key, ...body });
    const refused = [
      await put({ projectApiKey: other.key }), // a key of another project
      await put({ projectApiKey: mgmt }), // a management credential is no project key
      await put({ projectApiKey: 'svc_api_not-a-key' }),
      await put({ queueId: other.queueId }), // the key is this project's, the queue another's
      await put({ projectId: other.projectId, queueId: other.queueId }), // another project's queue, with this project's key
      await put({ queueId: '00000000-0000-7000-8000-000000000001' }),
    ];
    expect(refused.map((answer) => [answer.status, answer.body.data?.reason])).toEqual(Array(refused.length).fill([404, 'queue_not_found']));
    expect((await put({ projectApiKey: undefined })).status).toBe(400);
    expect((await put({ extra: true })).status).toBe(400);

    // A revoked key proves nothing.
    expect((await call(app, 'DELETE', `/v1/projects/${project.projectId}/api-keys/${project.keyId}`, owner)).status).toBe(200);
    expect((await put({})).body.data?.reason).toBe('queue_not_found');
    expect((await call(app, 'GET', route(wallet.id), mgmt)).body.data).toBeNull();
    expect((await pay(wallet.secret)).status).toBe(202);
    expect((await claim(other)).body.data).toBeNull();
  });

  it('lets only the wallet\'s own management credential read or name its queue; never shows the key', async () => {
    const wallet = await approvingWallet();
    const project = await projectWithQueue('guarded');
    const body = { projectId: project.projectId, queueId: project.queueId, projectApiKey: project.key };
    const another = await app.mgmtSecret('another-application');
    for (const [credential, status] of [[another, 404], [wallet.secret, 401], [project.key, 401], [owner, 401]] as const) {
      expect((await call(app, 'PUT', route(wallet.id), credential, body)).status).toBe(status);
      expect((await call(app, 'GET', route(wallet.id), credential)).status).toBe(status);
    }
    expect((await call(app, 'GET', route(wallet.id), mgmt)).body.data).toBeNull();
    const set = await call(app, 'PUT', route(wallet.id), mgmt, body);
    expect(set.status).toBe(200);
    expect(JSON.stringify(set.body)).not.toContain(project.key);
    expect(JSON.stringify((await call(app, 'GET', route(wallet.id), mgmt)).body)).not.toContain(project.key);
  });

  it('skips a queue deleted later: the approval is still asked, nothing is published, nothing fails', async () => {
    const wallet = await approvingWallet();
    const project = await projectWithQueue('short-lived');
    await call(app, 'PUT', route(wallet.id), mgmt, { projectId: project.projectId, queueId: project.queueId, projectApiKey: project.key });
    expect((await call(app, 'DELETE', `/v1/event-queues/${project.queueId}`, project.key)).status).toBe(200);
    const asked = await pay(wallet.secret);
    expect([asked.status, asked.body.data.approval.status]).toEqual([202, 'pending']);
    expect((await call(app, 'GET', `/v1/wallets/${wallet.id}/approvals?status=pending`, mgmt)).body.data.map((a: { id: string }) => a.id)).toEqual([asked.body.data.approval.id]);
  });
});
