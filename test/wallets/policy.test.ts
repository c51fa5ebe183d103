import http from 'node:http';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { DEFAULT_ASSET } from '../../src/chain/registry.js';
import { ManualClock } from '../../src/platform/clock.js';
import type { TestApp } from '../helpers/test-app.js';
import { buildWalletsApp, call, createWallet, freePort, settledPayment } from './helpers.js';

// Spend policies on the devchain: the wallet pays the app's own /x402-test/ping (100 atomic USDG) through
// pay-and-call, under a policy set by its management credential. Balances are read from the chain; the
// ping's request counter (metrics) tells whether a request reached the upstream at all.

const PRICE = 100n;
const clock = new ManualClock();
let app: TestApp;
let mgmt: string;
let ping: string;
let max: { network: string; asset: string; amount: string };
let payTo: Address;

interface Agent {
  id: string;
  address: Address;
  secret: string;
}

const balance = (agent: Agent) => app.ctx.chain.devchain!.balanceOf(agent.address);
const pay = (agent: Agent, extra: Record<string, unknown> = {}) => call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: ping, maxPayment: max, ...extra });
const setPolicy = (agent: Agent, policy: Record<string, unknown>, credential = mgmt) => call(app, 'PUT', `/v1/wallets/${agent.id}/policy`, credential, policy);
const rows = async (agent: Agent) => (await app.ctx.database.query<{ status: string; amount: string }>(sql`select status, amount::text from wallet_payments where wallet_id = ${agent.id} order by id`));
const usdg = (amount: bigint | number) => ({ network: DEFAULT_ASSET.network, asset: DEFAULT_ASSET.address, amount: String(amount) });

/** Requests the ping has answered so far (any status), from the api origin's metrics. */
async function pingRequests(): Promise<number> {
  const text = (await app.origins.api!.inject({ method: 'GET', url: '/metrics' })).body;
  return text
    .split('\n')
    .filter((line) => line.startsWith('tollgate_http_requests_total{') && line.includes('route="/x402-test/ping"'))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

let wallets = 0;
async function fundedAgent(): Promise<Agent> {
  const { wallet, secret } = await createWallet(app, mgmt, `policy-agent-${++wallets}`);
  await app.ctx.chain.devchain!.fund(wallet.address, '1');
  return { id: wallet.id, address: wallet.address, secret };
}

// An upstream on 127.0.0.1 that redirects to the ping by another name (localhost): a host rule can tell them apart.
let redirector: string;
let redirects = 0;
let redirectServer: http.Server;

beforeAll(async () => {
  const apiPort = await freePort();
  const redirectPort = await freePort();
  redirectServer = http.createServer((_request, response) => {
    redirects += 1;
    response.writeHead(307, { location: `http://localhost:${apiPort}/x402-test/ping` }).end();
  });
  await new Promise<void>((resolve) => redirectServer.listen(redirectPort, '127.0.0.1', resolve));
  redirector = `http://127.0.0.1:${redirectPort}`;
  app = await buildWalletsApp({ clock, env: { API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort} localhost:${apiPort} 127.0.0.1:${redirectPort}` } });
  ping = `${app.urls.api}/x402-test/ping`;
  max = { network: app.ctx.chain.network, asset: app.ctx.chain.asset.address, amount: '100' };
  mgmt = await app.mgmtSecret('policies');
  const challenge = await fetch(ping);
  payTo = (JSON.parse(Buffer.from(challenge.headers.get('payment-required')!, 'base64').toString()) as { accepts: { payTo: Address }[] }).accepts[0]!.payTo;
});
afterAll(async () => {
  await app?.close();
  redirectServer?.close();
});

describe('setting a policy', () => {
  it.each([
    ['an unknown window', { limits: [{ window: '2h', ...usdg(1) }] }, '/limits/0/window'],
    ['a fractional amount', { maxPerCall: { ...usdg(1), amount: '1.5' } }, '/maxPerCall/amount'],
    ['a host with a port', { denyHosts: ['example.com:443'] }, '/denyHosts/0'],
    ['an uppercase host', { allowHosts: ['Example.com'] }, '/allowHosts/0'],
    ['a payTo that is no address', { denyPayTo: ['0x1234'] }, '/denyPayTo/0'],
    ['a timeout under a minute', { approvalTimeoutSeconds: 59 }, '/approvalTimeoutSeconds'],
    ['a timeout over a day', { approvalTimeoutSeconds: 86_401 }, '/approvalTimeoutSeconds'],
    ['eleven limits', { limits: Array.from({ length: 11 }, () => ({ window: '1h', ...usdg(1) })) }, '/limits'],
  ])('refuses %s with 400 naming the field, and keeps the policy it had', async (_label, body, field) => {
    const agent = await fundedAgent();
    expect((await setPolicy(agent, { maxPerCall: usdg(500) })).status).toBe(200);
    const refused = await setPolicy(agent, body);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body.data)).toContain(field);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/policy`, mgmt)).body.data.maxPerCall).toEqual(usdg(500));
  });

  it('refuses a field the policy does not have (400), at any level, rather than ignoring a rule the owner thinks is set', async () => {
    const agent = await fundedAgent();
    const refused = await setPolicy(agent, { maxPerDay: usdg(1) });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body.data)).toContain('maxPerDay');
    const nested = await setPolicy(agent, { limits: [{ window: '1h', ...usdg(1), perHost: true }] });
    expect(nested.status).toBe(400);
    expect(JSON.stringify(nested.body.data)).toContain('perHost');
  });

  it('lets the wallet credential read its policy and budget but never set them; another application sees no wallet', async () => {
    const agent = await fundedAgent();
    const none = await call(app, 'GET', '/v1/wallets/me/policy', agent.secret);
    expect(none.body.data).toEqual({ walletId: agent.id, approvalTimeoutSeconds: 3600, updatedAt: null });
    const policy = { limits: [{ window: '24h', ...usdg(1000) }], denyHosts: ['*.example.com'] };
    const set = await setPolicy(agent, policy);
    expect(set.status).toBe(200);
    expect((await call(app, 'GET', '/v1/wallets/me/policy', agent.secret)).body.data).toMatchObject({ ...policy, walletId: agent.id, updatedAt: expect.any(String) });
    expect((await call(app, 'GET', '/v1/wallets/me/budget', agent.secret)).body.data).toEqual([
      { window: '24h', ...usdg(1000), spent: '0', reserved: '0', remaining: '1000', nextReleaseAt: null },
    ]);
    // The agent cannot lift its own cap.
    expect((await setPolicy(agent, {}, agent.secret)).status).toBe(401);
    const other = await app.mgmtSecret('another application');
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/policy`, other)).status).toBe(404);
    expect((await setPolicy(agent, {}, other)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/budget`, other)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/approvals`, other)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/policy`, mgmt)).body.data.denyHosts).toEqual(['*.example.com']);
  });
});

describe('who may be paid', () => {
  it('refuses a denied host with 409 before any request reaches it', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { denyHosts: ['10.0.0.1', '127.0.0.1'] });
    const before = { requests: await pingRequests(), balance: await balance(agent) };
    const refused = await pay(agent);
    expect(refused.status).toBe(409);
    expect(refused.body.data).toEqual({ reason: 'policy_host_denied', rule: 'denyHosts[1]' });
    expect(await pingRequests()).toBe(before.requests);
    expect(await rows(agent)).toEqual([]);
    expect(await balance(agent)).toBe(before.balance);
  });

  it('refuses a redirect to a denied host before following it: the denied host gets no request', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { denyHosts: ['localhost'] });
    const before = { requests: await pingRequests(), balance: await balance(agent) };
    const refused = await call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: `${redirector}/to-ping`, maxPayment: max });
    expect(refused.status).toBe(409);
    expect(refused.body.data).toEqual({ reason: 'policy_host_denied', rule: 'denyHosts[0]' });
    expect(redirects).toBeGreaterThan(0);
    expect(await pingRequests()).toBe(before.requests);
    expect(await balance(agent)).toBe(before.balance);
    // Without the rule the same redirect is followed and paid.
    await setPolicy(agent, {});
    await settledPayment(app, agent.secret, (await call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: `${redirector}/to-ping`, maxPayment: max })).body.data.payment);
  });

  it('refuses a host outside allowHosts (*.domain matches subdomains only)', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { allowHosts: ['*.127.0.0.1', 'api.example.com'] });
    const before = await pingRequests();
    const refused = await pay(agent);
    expect(refused.body.data).toEqual({ reason: 'policy_host_denied', rule: 'allowHosts' });
    expect(await pingRequests()).toBe(before);
    await setPolicy(agent, { allowHosts: ['127.0.0.1'] });
    await settledPayment(app, agent.secret, (await pay(agent)).body.data.payment);
  });

  it('refuses a denied payTo after the challenge: the upstream got the unpaid request only, nothing is signed', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { denyPayTo: [payTo.toLowerCase()] });
    const before = { requests: await pingRequests(), balance: await balance(agent) };
    const refused = await pay(agent);
    expect(refused.status).toBe(409);
    expect(refused.body.data).toEqual({ reason: 'policy_payto_denied', rule: 'denyPayTo[0]' });
    expect(await pingRequests()).toBe(before.requests + 1);
    expect(await rows(agent)).toEqual([]);
    expect(await balance(agent)).toBe(before.balance);

    await setPolicy(agent, { allowPayTo: ['0x000000000000000000000000000000000000dEaD'] });
    expect((await pay(agent)).body.data).toEqual({ reason: 'policy_payto_denied', rule: 'allowPayTo' });
    await setPolicy(agent, { allowPayTo: [payTo] });
    await settledPayment(app, agent.secret, (await pay(agent)).body.data.payment);
  });

  it('refuses above maxPerCall, and in an asset no amount rule names', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { maxPerCall: usdg(99) });
    expect((await pay(agent)).body.data).toEqual({ reason: 'policy_per_call_exceeded', rule: 'maxPerCall' });
    await setPolicy(agent, { maxPerCall: { ...usdg(1000), asset: '0x000000000000000000000000000000000000bEEF' } });
    expect((await pay(agent)).body.data).toEqual({ reason: 'policy_per_call_exceeded', rule: 'maxPerCall' });
    await setPolicy(agent, { limits: [{ window: '1h', ...usdg(1000), network: 'eip155:1' }] });
    expect((await pay(agent)).body.data).toEqual({ reason: 'policy_limit_exceeded', rule: 'limits' });
    expect(await rows(agent)).toEqual([]);
    await setPolicy(agent, { maxPerCall: usdg(100) });
    await settledPayment(app, agent.secret, (await pay(agent)).body.data.payment);
  });
});

describe('rolling limits', () => {
  it('pays up to the limit, refuses the next with the budget in data, and frees the window when it rolls past', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { limits: [{ window: '1h', ...usdg(250) }, { window: '30d', ...usdg(10_000) }] });
    const start = await balance(agent);
    const first = await pay(agent);
    clock.advance(60_000);
    const second = await pay(agent);
    expect([first.status, second.status]).toEqual([200, 200]);
    // Answered pending (the seller settled; the chain is asked after): counted as reserved until the chain confirms.
    expect([first.body.data.payment.status, second.body.data.payment.status]).toEqual(['pending', 'pending']);
    await settledPayment(app, agent.secret, first.body.data.payment);
    await settledPayment(app, agent.secret, second.body.data.payment);

    const refused = await pay(agent);
    expect(refused.status).toBe(409);
    expect(refused.body.data).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]', budget: { window: '1h', spent: '200', reserved: '0', remaining: '50' } });
    expect(await balance(agent)).toBe(start - 2n * PRICE);
    const firstAt = new Date(first.body.data.payment.createdAt).getTime();
    const budget = (await call(app, 'GET', '/v1/wallets/me/budget', agent.secret)).body.data;
    expect(budget).toEqual([
      { window: '1h', ...usdg(250), spent: '200', reserved: '0', remaining: '50', nextReleaseAt: new Date(firstAt + 3_600_000).toISOString() },
      { window: '30d', ...usdg(10_000), spent: '200', reserved: '0', remaining: '9800', nextReleaseAt: new Date(firstAt + 30 * 86_400_000).toISOString() },
    ]);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/budget`, mgmt)).body.data).toEqual(budget);

    // An hour after the first payment it leaves the 1h window: one more fits, the 30d window still counts all.
    clock.advance(3_600_000 - 60_000 + 1_000);
    const third = await pay(agent);
    await settledPayment(app, agent.secret, third.body.data.payment);
    expect((await call(app, 'GET', '/v1/wallets/me/budget', agent.secret)).body.data.map((b: { spent: string }) => b.spent)).toEqual(['200', '300']);
  });

  it('applies a policy change to the next call at once', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { limits: [{ window: '24h', ...usdg(100) }] });
    expect((await pay(agent)).status).toBe(200);
    expect((await pay(agent)).body.data.reason).toBe('policy_limit_exceeded');
    await setPolicy(agent, { limits: [{ window: '24h', ...usdg(200) }] });
    expect((await pay(agent)).status).toBe(200);
    await setPolicy(agent, { limits: [{ window: '24h', ...usdg(200) }], denyHosts: ['127.0.0.1'] });
    expect((await pay(agent)).body.data.reason).toBe('policy_host_denied');
    await setPolicy(agent, {});
    expect((await pay(agent)).status).toBe(200);
  });

  it('holds under 20 concurrent calls: exactly the limit is paid, on chain too', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { limits: [{ window: '24h', ...usdg(5 * Number(PRICE)) }] });
    const start = await balance(agent);
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay(agent)));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 409)).toHaveLength(15);
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.data.reason === 'policy_limit_exceeded')).toBe(true);
    expect(await balance(agent)).toBe(start - 5n * PRICE);
    for (const answer of answers.filter((a) => a.status === 200)) await settledPayment(app, agent.secret, answer.body.data.payment);
    expect((await rows(agent)).map((r) => r.status)).toEqual(Array(5).fill('settled'));
  });

  it('counts an open payment as reserved, and a failed one releases it', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { limits: [{ window: '24h', ...usdg(150) }] });
    // A payment the upstream never answered: open until the chain says (here: failed, expired unused).
    await app.ctx.database.query(sql`insert into wallet_payments (id, wallet_id, credential_id, status, x402_version, scheme, network, asset, amount, pay_to, nonce, valid_before, method, resource, created_at, updated_at)
      select gen_random_uuid(), ${agent.id}, id, 'unknown', 2, 'exact', ${max.network}, ${max.asset}, 100, ${payTo}, '0x' || md5(random()::text) || md5(random()::text), 0, 'GET', ${ping}, ${clock.now()}, ${clock.now()}
      from wallet_credentials where wallet_id = ${agent.id} limit 1`);
    expect((await call(app, 'GET', '/v1/wallets/me/budget', agent.secret)).body.data[0]).toMatchObject({ spent: '0', reserved: '100', remaining: '50' });
    expect((await pay(agent)).body.data).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
    await app.ctx.database.query(sql`update wallet_payments set status = 'failed' where wallet_id = ${agent.id}`);
    await settledPayment(app, agent.secret, (await pay(agent)).body.data.payment);
  });
});

describe('human approvals', () => {
  const approvals = (agent: Agent, status?: string) => call(app, 'GET', `/v1/wallets/${agent.id}/approvals${status ? `?status=${status}` : ''}`, mgmt);
  const decide = (agent: Agent, id: string, action: 'approve' | 'deny') => call(app, 'POST', `/v1/wallets/${agent.id}/approvals/${id}/${action}`, mgmt);

  it('answers 202 with a pending approval, nothing signed; approved, the repeated call pays once', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    const start = await balance(agent);
    const asked = await pay(agent);
    expect(asked.status).toBe(202);
    const approval = asked.body.data.approval;
    expect(approval).toMatchObject({ status: 'pending', amount: '100', payTo, url: ping, method: 'GET', decidedBy: null });
    expect(new Date(approval.expiresAt).getTime() - new Date(approval.createdAt).getTime()).toBe(3_600_000);
    // Asking again waits on the same approval; so does repeating with its id while it is pending.
    expect((await pay(agent)).body.data.approval.id).toBe(approval.id);
    const waiting = await pay(agent, { approvalId: approval.id });
    expect([waiting.status, waiting.body.data.approval.id]).toEqual([202, approval.id]);
    expect(await rows(agent)).toEqual([]);
    expect(await balance(agent)).toBe(start);
    expect((await approvals(agent, 'pending')).body.data.map((a: { id: string }) => a.id)).toEqual([approval.id]);

    const approved = await decide(agent, approval.id, 'approve');
    expect(approved.status).toBe(200);
    expect(approved.body.data).toMatchObject({ status: 'approved', decidedBy: expect.any(String), decidedAt: expect.any(String) });
    expect((await decide(agent, approval.id, 'approve')).status).toBe(200);

    // Without the approval id the call still waits on a human (a new approval); with it, it pays.
    const paid = await pay(agent, { approvalId: approval.id });
    expect(paid.status).toBe(200);
    await settledPayment(app, agent.secret, paid.body.data.payment);
    expect(await balance(agent)).toBe(start - PRICE);
    const used = (await approvals(agent, 'consumed')).body.data;
    expect(used).toEqual([expect.objectContaining({ id: approval.id, paymentId: paid.body.data.payment.id, consumedAt: expect.any(String) })]);

    // Consumed once: a second call with it is refused, nothing moves; it can no longer be decided.
    expect((await decide(agent, approval.id, 'deny')).body.data).toMatchObject({ reason: 'approval_not_pending' });
    const again = await pay(agent, { approvalId: approval.id });
    expect(again.status).toBe(409);
    expect(again.body.data.reason).toBe('approval_used');
    expect(await balance(agent)).toBe(start - PRICE);
  });

  it('an approval pays only its url and at most its amount', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    const approval = (await pay(agent)).body.data.approval;
    await decide(agent, approval.id, 'approve');
    const elsewhere = await call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: `${ping}?other=1`, maxPayment: max, approvalId: approval.id });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body.data.reason).toBe('approval_mismatch');
    // Another wallet cannot use it at all.
    const stranger = await fundedAgent();
    await setPolicy(stranger, { approvalAbove: usdg(50) });
    expect((await pay(stranger, { approvalId: approval.id })).body.data.reason).toBe('approval_not_found');
    // Still usable for its own call.
    await settledPayment(app, agent.secret, (await pay(agent, { approvalId: approval.id })).body.data.payment);
  });

  it('an approved approval can be withdrawn (denied) until it is used; another application cannot decide it', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    const approval = (await pay(agent)).body.data.approval;
    const other = await app.mgmtSecret('another application');
    expect((await call(app, 'POST', `/v1/wallets/${agent.id}/approvals/${approval.id}/approve`, other)).status).toBe(404);
    expect((await call(app, 'POST', `/v1/wallets/${agent.id}/approvals/${approval.id}/deny`, other)).status).toBe(404);
    expect((await call(app, 'GET', `/v1/wallets/${agent.id}/approvals`, mgmt)).body.data[0].status).toBe('pending');
    expect((await decide(agent, approval.id, 'approve')).body.data.status).toBe('approved');
    expect((await decide(agent, approval.id, 'deny')).body.data.status).toBe('denied');
    expect((await pay(agent, { approvalId: approval.id })).body.data.reason).toBe('approval_denied');
    expect(await rows(agent)).toEqual([]);
  });

  it("an approvalId of another call's pending approval is a mismatch, not that call's approval", async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    const forOther = (await call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: `${ping}?other=1`, maxPayment: max })).body.data.approval;
    const refused = await pay(agent, { approvalId: forOther.id });
    expect([refused.status, refused.body.data.reason]).toEqual([409, 'approval_mismatch']);
  });

  it('a denied approval is refused and kept with who denied it', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    const start = await balance(agent);
    const approval = (await pay(agent)).body.data.approval;
    const denied = await decide(agent, approval.id, 'deny');
    expect(denied.body.data).toMatchObject({ status: 'denied', decidedBy: expect.any(String) });
    expect((await decide(agent, approval.id, 'approve')).status).toBe(409);
    const refused = await pay(agent, { approvalId: approval.id });
    expect([refused.status, refused.body.data.reason]).toEqual([409, 'approval_denied']);
    expect((await approvals(agent)).body.data).toEqual([expect.objectContaining({ id: approval.id, status: 'denied', decidedAt: denied.body.data.decidedAt })]);
    expect(await balance(agent)).toBe(start);
  });

  it('expires by the database clock: then it can neither be decided nor used', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50), approvalTimeoutSeconds: 60 });
    const pending = (await pay(agent)).body.data.approval;
    const approved = (await pay(agent, { url: `${ping}?second=1` })).body.data.approval;
    await decide(agent, approved.id, 'approve');
    clock.advance(61_000);
    expect((await decide(agent, pending.id, 'approve')).body.data).toMatchObject({ reason: 'approval_not_pending', approval: { status: 'expired' } });
    const late = await call(app, 'POST', '/v1/wallets/me/pay-and-call', agent.secret, { url: `${ping}?second=1`, maxPayment: max, approvalId: approved.id });
    expect([late.status, late.body.data.reason]).toEqual([409, 'approval_expired']);
    expect((await approvals(agent, 'expired')).body.data.map((a: { id: string }) => a.id).sort()).toEqual([pending.id, approved.id].sort());
    expect(await rows(agent)).toEqual([]);
  });

  it('refuses a new approval past 100 waiting ones: an agent cannot bury the real requests', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50) });
    await app.ctx.database.query(sql`insert into wallet_approvals (id, wallet_id, status, network, asset, amount, pay_to, method, url, requested_by, expires_at)
      select gen_random_uuid(), ${agent.id}, 'pending', ${max.network}, ${max.asset}, 100, ${payTo}, 'GET', ${ping} || '?n=' || n, gen_random_uuid(), ${new Date(clock.now().getTime() + 3_600_000)}::timestamptz
      from generate_series(1, 100) n`);
    const refused = await pay(agent);
    expect([refused.status, refused.body.data.reason]).toEqual([409, 'approvals_pending_full']);
    // One decided frees a place.
    const [oldest] = (await approvals(agent, 'pending')).body.data.slice(-1);
    await decide(agent, oldest.id, 'deny');
    expect((await pay(agent)).status).toBe(202);
  });

  it('checks the limits before asking a human: a call no approval could let through is refused', async () => {
    const agent = await fundedAgent();
    await setPolicy(agent, { approvalAbove: usdg(50), limits: [{ window: '24h', ...usdg(99) }] });
    expect((await pay(agent)).body.data).toMatchObject({ reason: 'policy_limit_exceeded', rule: 'limits[0]' });
    expect((await approvals(agent)).body.data).toEqual([]);
  });
});
