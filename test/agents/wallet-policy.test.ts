// A runtime_b agent's wallet under the wallets' spend policy (issue 44 items 2, 3, 6): its user sets the same
// policy a wallet has at /agents/{id}/wallet/policy; a tool payment the policy refuses tells the model why and
// what remains, and nothing is signed or moved (the chain's balance and the wallet's payment rows say so);
// every payment is listed for the agent's owner and in the turn that made it, even when that turn failed;
// approval requests go into an event queue of the owner's project; a wallet's owner lists its payments.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { newestAgentPaymentSettled, waitFor } from '../wallets/helpers.js';

/**
 * The model: "pay <url>" (optionally "with <approvalId>") calls the tool; its result comes back as
 * "tool said: <result>", unless the user asked "… then fail": then the provider fails after the tool paid.
 */
const model = http.createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  const reply = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
  const last = body.messages.at(-1);
  const asked = String(body.messages.findLast((m: { role: string }) => m.role === 'user').content);
  const usage = { prompt_tokens: 5, completion_tokens: 5 };
  if (last.role === 'tool') {
    if (asked.endsWith('then fail')) return reply(500, { error: { message: 'the model crashed', type: 'server_error' } });
    return reply(200, { choices: [{ index: 0, message: { role: 'assistant', content: `tool said: ${last.content}` }, finish_reason: 'stop' }], usage });
  }
  const [, url, approvalId] = /^pay (\S+)(?: with (\S+))?/.exec(asked) ?? [];
  const call = { id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: JSON.stringify({ url, ...(approvalId ? { approvalId } : {}) }) } };
  return reply(200, { choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage });
});

let app: TestApp;
let token: string;
let agentId: string;
let wallet: `0x${string}`;
let walletId: string;
let ping: string;
let usdg: string;

const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}, as = token) => {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${as}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
};
/** The tool's result as the model was given it (the stand-in echoes it). */
const toolResult = (answer: { body: any }) => JSON.parse(String(answer.body.data.text).replace(/^tool said: /, ''));
const chat = (content: string, session = 'main', headers: Record<string, string> = {}) => call('POST', `/agents/${agentId}/chat`, { session, messages: [{ role: 'user', content }] }, headers);
const paymentRows = async () => (await app.ctx.database.query<{ n: number }>(sql`select count(*)::int as n from wallet_payments where wallet_id = ${walletId}`))[0]!.n;
const balance = () => app.ctx.chain.devchain!.balanceOf(wallet);

const settledAgentPayment = () => newestAgentPaymentSettled(async () => (await call('GET', `/agents/${agentId}/payments?limit=100`)).body.data);
/** A wallet's pay-and-call payment once the chain has confirmed it, as its credential lists it. */
const settledPayment = (secret: string, payment: { id: string }) =>
  waitFor(async () => {
    const found = ((await call('GET', '/v1/wallets/me/payments?limit=100', undefined, {}, secret)).body.data as Array<{ id: string; status: string }>).find((p) => p.id === payment.id);
    return found?.status === 'settled' && found;
  }, 20_000);

beforeAll(async () => {
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(model.address() as AddressInfo).port}`;
  app = await buildTestApp({ env: { AGENT_OPENAI_BASE_URL: `${base}/openai/v1`, PAY_AND_CALL_ALLOW_HOSTS: '127.0.0.1' } });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 2000, note: 'test' });
  token = await app.identityToken('owner');
  agentId = (await call('POST', '/agents', { name: 'shopper', type: 'runtime_b' })).body.data.agent.id;
  for (let waited = 0; (await call('GET', `/agents/${agentId}`)).body.data.status !== 'running'; waited += 100) {
    if (waited > 30_000) throw new Error('the agent was not deployed');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-openai-test-0000' });
  const budget = (await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '500' })).body.data;
  wallet = budget.wallet.address;
  walletId = budget.wallet.id;
  await app.ctx.chain.devchain!.fund(wallet, '1');
  ping = `${app.urls.api}/x402-test/ping`;
  usdg = app.ctx.chain.asset.address;
}, 60_000);
afterAll(async () => {
  await app?.close();
  model.close();
});

describe("a hosted agent's wallet under the spend policy", () => {
  it('refuses a payTo the policy does not allow: the model is told why and what remains; nothing is signed or moved', async () => {
    expect((await call('GET', `/agents/${agentId}/wallet/policy`)).body.data).toEqual({ walletId, approvalTimeoutSeconds: 3600, updatedAt: null });
    const policy = { allowPayTo: ['0x000000000000000000000000000000000000dEaD'], limits: [{ window: '24h', network: 'eip155:4663', asset: usdg, amount: '300' }] };
    const set = await call('PUT', `/agents/${agentId}/wallet/policy`, policy);
    expect(set.status).toBe(200);
    expect(set.body.data).toEqual({ ...policy, walletId, approvalTimeoutSeconds: 3600, updatedAt: expect.any(String) });
    expect((await call('GET', `/agents/${agentId}/wallet/policy`)).body.data).toEqual(set.body.data);

    const before = await balance();
    const answered = await chat(`pay ${ping}`);
    expect(answered.status).toBe(200);
    const result = toolResult(answered);
    expect(result).toMatchObject({ paid: false, refused: 'policy_payto_denied', remaining: '500', limits: [{ window: '24h', amount: '300', spent: '0', reserved: '0', remaining: '300' }] });
    expect(result.message).toMatch(/allowPayTo.*nothing was signed/);
    expect(result.message).not.toMatch(/maxPayment/);
    // Nothing moved, nothing was signed or held.
    expect(await balance()).toBe(before);
    expect(await paymentRows()).toBe(0);
    expect((await call('GET', `/agents/${agentId}/payments`)).body.data).toEqual([]);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data).toMatchObject({ paymentBudget: '500', paymentSpent: '0' });

    for (const body of [{ allowPayTo: ['not-an-address'] }, { limits: [{ window: '2h', network: 'eip155:4663', asset: usdg, amount: '1' }] }, { unknown: true }]) {
      expect((await call('PUT', `/agents/${agentId}/wallet/policy`, body)).status, JSON.stringify(body)).toBe(400);
    }
    const other = await app.identityToken('mallory');
    expect((await call('PUT', `/agents/${agentId}/wallet/policy`, {}, {}, other)).body).toMatchObject({ code: 1004, data: { reason: 'agent_not_found' } });
  });

  it('refuses a price above what the budget has left in those terms, never the maxPayment the model did not set', async () => {
    await call('PUT', `/agents/${agentId}/wallet/policy`, {});
    await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '50' });
    const result = toolResult(await chat(`pay ${ping}`, 'price'));
    expect(result).toMatchObject({ paid: false, refused: 'payment_refused', remaining: '50', limits: [] });
    expect(result.message).toBe("The resource asks 100 atomic units of USDG, more than what this agent's payment budget has left (50); nothing was signed");
    expect(await paymentRows()).toBe(0);
  });

  it("lists every payment for the agent's owner (host, payTo, amount, status, transaction, request id, turn) and in the turn that made it, even one that failed", async () => {
    await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '500' });
    const paid = await chat(`pay ${ping}`, 'main', { 'x-request-id': 'chat-req-0001' });
    const paidResult = toolResult(paid);
    expect(paidResult).toMatchObject({ status: 200, payment: { status: 'pending', amount: '100' } });
    await settledAgentPayment();

    // The provider fails after the tool paid: the turn fails, its payment stays with it.
    const failed = await chat(`pay ${ping} then fail`, 'fails');
    expect(failed.body).toMatchObject({ code: 1011, data: { reason: 'provider_failed', providerStatus: 500 } });
    const history = (await call('GET', `/agents/${agentId}/chat/history?session=fails`)).body.data;
    expect(history.messages).toEqual([{ role: 'user', content: `pay ${ping} then fail` }]);
    expect(history.turns).toHaveLength(1);
    const [turn] = history.turns;
    expect(turn).toMatchObject({ status: 'failed', error: expect.stringMatching(/^provider_failed/) });
    await settledAgentPayment();
    turn.payments = (await call('GET', `/agents/${agentId}/chat/history?session=fails`)).body.data.turns[0].payments;
    expect(turn.payments).toEqual([expect.objectContaining({ kind: 'tool', status: 'settled', amount: '100', turnId: turn.id, session: 'fails' })]);

    const listed = (await call('GET', `/agents/${agentId}/payments`)).body.data;
    const payTo = listed[0].payTo;
    expect(payTo).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const mainTurn = (await call('GET', `/agents/${agentId}/chat/history`)).body.data.turns.at(-1);
    expect(mainTurn).toMatchObject({ status: 'completed', requestId: 'chat-req-0001' });
    expect(listed).toEqual([
      expect.objectContaining({ kind: 'tool', host: '127.0.0.1', payTo, amount: '100', status: 'settled', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), turnId: turn.id, session: 'fails', requestId: expect.any(String) }),
      expect.objectContaining({ kind: 'tool', host: '127.0.0.1', payTo, amount: '100', status: 'settled', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), turnId: mainTurn.id, session: 'main', requestId: 'chat-req-0001' }),
    ]);
    expect(mainTurn.payments).toEqual([listed[1]]);
    // The cursor: a page of one, then the next after it, then the end.
    const first = (await call('GET', `/agents/${agentId}/payments?limit=1`)).body.data;
    expect(first).toEqual([listed[0]]);
    expect((await call('GET', `/agents/${agentId}/payments?limit=1&before=${first[0].id}`)).body.data).toEqual([listed[1]]);
    expect((await call('GET', `/agents/${agentId}/payments?before=${listed[1].id}`)).body.data).toEqual([]);
    expect((await call('GET', `/agents/${agentId}/payments?limit=0`)).status).toBe(400);
    // The holds close once the chain has settled their payments (the holds loop, every 5 s).
    await waitFor(async () => (await call('GET', `/agents/${agentId}/usage`)).body.data.payments.held === '0', 20_000);
    expect((await call('GET', `/agents/${agentId}/usage`)).body.data.payments).toMatchObject({ count: 2, spent: '200', held: '0' });
  });

  it("publishes approval requests into the queue its owner picked; approved, the agent pays with the approval once", async () => {
    const project = (await call('POST', '/v1/projects', { name: 'pager' })).body.data;
    const projectKey = project.apiKey.secret as string;
    const queue = (await call('POST', '/v1/event-queues', { name: 'approvals' }, {}, projectKey)).body.data;
    expect((await call('GET', `/agents/${agentId}/wallet/approval-events`)).body.data).toBeNull();
    const target = { projectId: project.project.id, queueId: queue.id };
    expect((await call('PUT', `/agents/${agentId}/wallet/approval-events`, target)).body.data).toEqual(target);
    // Not a queue of one's own project: 404, whoever's it is.
    const mallory = await app.identityToken('mallory');
    const theirs = (await call('POST', '/v1/projects', { name: 'theirs' }, {}, mallory)).body.data.project.id;
    expect((await call('PUT', `/agents/${agentId}/wallet/approval-events`, { projectId: theirs, queueId: queue.id })).status).toBe(404);
    expect((await call('PUT', `/agents/${agentId}/wallet/approval-events`, { projectId: project.project.id, queueId: '00000000-0000-7000-8000-000000000001' })).status).toBe(404);

    await call('PUT', `/agents/${agentId}/wallet/policy`, { approvalAbove: { network: 'eip155:4663', asset: usdg, amount: '50' } });
    const before = await balance();
    const pending = toolResult(await chat(`pay ${ping}`, 'approval'));
    expect(pending).toMatchObject({ paid: false, refused: 'approval_pending', approval: { status: 'pending', amount: '100', url: ping } });
    const approvalId = pending.approval.id;

    const claim = () => call('POST', `/v1/event-queues/${queue.id}/claim`, {}, {}, projectKey);
    const claimed = (await claim()).body.data;
    expect(claimed.event.payload).toEqual({ type: 'wallet_approval.requested', approvalId, walletId, approval: expect.objectContaining({ id: approvalId, walletId, status: 'pending', amount: '100', url: ping }) });
    // The same call asked again waits on the same approval: no second request, no second event.
    expect(toolResult(await chat(`pay ${ping}`, 'approval-again')).approval.id).toBe(approvalId);
    expect((await claim()).body.data).toBeNull();

    expect((await call('GET', `/agents/${agentId}/wallet/approvals?status=pending`)).body.data.map((a: { id: string }) => a.id)).toEqual([approvalId]);
    expect((await call('POST', `/agents/${agentId}/wallet/approvals/${approvalId}/approve`)).body.data).toMatchObject({ id: approvalId, status: 'approved' });
    expect(await balance()).toBe(before);
    const approved = toolResult(await chat(`pay ${ping} with ${approvalId}`, 'approval'));
    expect(approved).toMatchObject({ status: 200, payment: { status: 'pending', amount: '100' } });
    await settledAgentPayment();
    expect(await balance()).toBe(before - 100n);
    expect((await call('GET', `/agents/${agentId}/wallet/approvals`)).body.data[0]).toMatchObject({ id: approvalId, status: 'consumed' });
    // Used once: the same approval again is refused, nothing more moves.
    expect(toolResult(await chat(`pay ${ping} with ${approvalId}`, 'approval'))).toMatchObject({ paid: false, refused: 'approval_used' });
    expect(await balance()).toBe(before - 100n);

    expect((await call('PUT', `/agents/${agentId}/wallet/approval-events`, null)).body.data).toBeNull();
  });

  it('a runtime_a agent has no wallet to govern: 409', async () => {
    const plain = (await call('POST', '/agents', { name: 'talker', type: 'runtime_a' })).body.data.agent.id;
    expect((await call('GET', `/agents/${plain}/wallet/policy`)).body).toMatchObject({ code: 1005, data: { reason: 'agent_has_no_wallet' } });
    expect((await call('GET', `/agents/${plain}/payments`)).body.data).toEqual([]);
  });
});

describe("a wallet's payments for its management credential", () => {
  it('lists them newest first with host, payTo, amount, status, transaction and request id; pages with before; another application gets 404', async () => {
    const mgmt = await app.mgmtSecret('payments');
    const created = (await call('POST', '/v1/wallets', { externalId: 'lister', name: 'lister' }, {}, mgmt)).body.data;
    const secret = created.credential.secret as string;
    await app.ctx.chain.devchain!.fund(created.wallet.address, '1');
    const pay = (requestId: string) => call('POST', '/v1/wallets/me/pay-and-call', { url: ping, maxPayment: { network: 'eip155:4663', asset: usdg, amount: '100' } }, { 'x-request-id': requestId }, secret);
    const answered = [(await pay('wallet-req-0001')).body.data.payment, (await pay('wallet-req-0002')).body.data.payment];
    expect(answered.map((p) => p.status)).toEqual(['pending', 'pending']);
    const paid = [await settledPayment(secret, answered[0]), await settledPayment(secret, answered[1])];
    const route = `/v1/wallets/${created.wallet.id}/payments`;
    const listed = (await call('GET', route, undefined, {}, mgmt)).body.data;
    expect(listed).toEqual([paid[1], paid[0]]);
    expect(listed.map((p: any) => [p.host, p.amount, p.status, p.requestId, /^0x[0-9a-f]{64}$/.test(p.transaction), /^0x/.test(p.payTo)])).toEqual([
      ['127.0.0.1', '100', 'settled', 'wallet-req-0002', true, true],
      ['127.0.0.1', '100', 'settled', 'wallet-req-0001', true, true],
    ]);
    expect((await call('GET', `${route}?limit=1&before=${listed[0].id}`, undefined, {}, mgmt)).body.data).toEqual([listed[1]]);
    expect((await call('GET', route, undefined, {}, await app.mgmtSecret('another'))).status).toBe(404);
    expect((await call('GET', route, undefined, {}, secret)).status).toBe(401);
    expect((await call('GET', `${route}?before=nope`, undefined, {}, mgmt)).status).toBe(400);
  });
});
