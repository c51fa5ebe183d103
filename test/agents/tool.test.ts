// runtime_b pays for x402 resources itself: a model (stand-ins of OpenAI and Anthropic speaking their
// tool-use formats) asks for the pay_and_call tool, the runtime has the service pay /x402-test/ping from
// the agent's own wallet on the devchain within the budget its user set, and the model answers with the
// result. Beyond the budget nothing is signed and the balance does not move.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { newestAgentPaymentSettled, waitFor } from '../wallets/helpers.js';

const received: any[] = [];
/** "pay <url>" makes the model call the tool; a tool result makes it answer "tool said: <result>". */
const model = http.createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  received.push({ path: request.url, body });
  const reply = (payload: unknown) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
  const last = body.messages.at(-1);
  if (request.url === '/anthropic/v1/messages') {
    const result = Array.isArray(last.content) ? last.content.find((part: { type: string }) => part.type === 'tool_result') : null;
    if (result) return reply({ type: 'message', role: 'assistant', content: [{ type: 'text', text: `tool said: ${result.content}` }], stop_reason: 'end_turn', usage: { input_tokens: 5, output_tokens: 5 } });
    const url = String(last.content).replace(/^pay /, '');
    return reply({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Paying.' }, { type: 'tool_use', id: 'toolu_1', name: 'pay_and_call', input: { url } }], stop_reason: 'tool_use', usage: { input_tokens: 5, output_tokens: 5 } });
  }
  if (last.role === 'tool') return reply({ choices: [{ index: 0, message: { role: 'assistant', content: `tool said: ${last.content}` }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 5 } });
  const url = String(last.content).replace(/^pay /, '');
  const call = { id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: JSON.stringify({ url }) } };
  return reply({ choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [call] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 5, completion_tokens: 5 } });
});

// An upstream that asks /x402-test/ping's price, keeps the signature it is paid with and answers without a receipt.
let kept: string | undefined;
const upstream = http.createServer(async (request, response) => {
  const signature = request.headers['payment-signature'];
  if (typeof signature === 'string') {
    kept = signature;
    return response.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"maybe"}');
  }
  const challenge = await fetch(`${app.urls.api}/x402-test/ping`);
  response.writeHead(402, { 'content-type': 'application/json', 'payment-required': challenge.headers.get('payment-required')! }).end(await challenge.text());
});

let app: TestApp;
let token: string;
let agentId: string;
const call = async (method: string, path: string, body?: unknown, as = token) => {
  const response = await fetch(`${app.urls.api}${path}`, { method, headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
};

const settledAgentPayment = () => newestAgentPaymentSettled(async () => (await call('GET', `/agents/${agentId}/payments?limit=100`)).body.data);

beforeAll(async () => {
  await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(model.address() as AddressInfo).port}`;
  // The tool may call loopback over http: this service, the upstream above, and a port where nothing listens.
  app = await buildTestApp({ env: { AGENT_OPENAI_BASE_URL: `${base}/openai/v1`, AGENT_ANTHROPIC_BASE_URL: `${base}/anthropic/v1`, PAY_AND_CALL_ALLOW_HOSTS: '127.0.0.1' } });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'buyer', cents: 2000, note: 'test' });
  token = await app.identityToken('buyer');
  agentId = (await call('POST', '/agents', { name: 'shopper', type: 'runtime_b' })).body.data.agent.id;
  // The worker deploys it (and gives it a wallet).
  for (let waited = 0; (await call('GET', '/agents')).body.data[0].status !== 'running'; waited += 100) {
    if (waited > 30_000) throw new Error('the agent was not deployed');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-openai-test-0000' });
}, 60_000);
afterAll(async () => {
  await app?.close();
  model.close();
  upstream.close();
});

describe('runtime_b pays for x402 resources from its own wallet', () => {
  it('pays /x402-test/ping within its budget and is refused beyond it', async () => {
    const budget = (await call('GET', `/agents/${agentId}/budget`)).body.data;
    expect(budget).toMatchObject({ paymentBudget: '0', paymentSpent: '0', wallet: { address: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) } });
    const wallet = budget.wallet.address as `0x${string}`;
    await app.ctx.chain.devchain!.fund(wallet, '1');
    const ping = `${app.urls.api}/x402-test/ping`;

    // No budget yet: the tool is refused, nothing moves.
    const unfunded = await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: `pay ${ping}` }] });
    expect(unfunded.body.data.text).toContain('payment_budget_exhausted');
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(1_000_000n);

    expect((await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '150' })).body.data).toMatchObject({ paymentBudget: '150', paymentSpent: '0' });
    const paid = await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: `pay ${ping}` }] });
    expect(paid.status).toBe(200);
    const result = JSON.parse(paid.body.data.text.replace(/^tool said: /, ''));
    // The tool's answer does not wait for the chain (pending, no transaction of the chain's yet); the chain then settles it.
    expect(result).toMatchObject({ status: 200, body: { message: 'paid pong' }, payment: { status: 'pending', amount: '100', transaction: null, sellerTransaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) } });
    expect(await settledAgentPayment()).toMatchObject({ status: 'settled', amount: '100' });
    // The model was offered the tool in OpenAI's format, and got the result back as a tool message.
    const [offered, answered] = received.slice(-2);
    expect(offered.body.tools).toEqual([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'pay_and_call' }) })]);
    expect(answered.body.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_1' });
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(1_000_000n - 100n);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data).toMatchObject({ paymentBudget: '150', paymentSpent: '100' });

    // 50 left, the price is 100: refused before anything is signed.
    const beyond = await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: `pay ${ping}` }] });
    expect(beyond.body.data.text).toContain('payment_refused');
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(1_000_000n - 100n);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent).toBe('100');

    // The budget cannot go below what was spent; raised, Anthropic's tool_use pays the same way.
    expect((await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '99' })).body).toMatchObject({ code: 1005, data: { reason: 'budget_below_spent' } });
    await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '200' });
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'anthropic', apiKey: 'sk-ant-test-0000' });
    const viaAnthropic = await call('POST', `/agents/${agentId}/chat`, { session: 'claude', messages: [{ role: 'user', content: `pay ${ping}` }] });
    const anthropicResult = JSON.parse(viaAnthropic.body.data.text.replace(/^tool said: /, ''));
    expect(anthropicResult).toMatchObject({ status: 200, payment: { status: 'pending', amount: '100' } });
    await settledAgentPayment();
    expect(received.at(-1).body.messages.at(-1).content).toEqual([expect.objectContaining({ type: 'tool_result', tool_use_id: 'toolu_1' })]);
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(1_000_000n - 200n);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent).toBe('200');
    // Held until the chain settled them, then spent (the holds loop follows the payments).
    await waitFor(async () => (await call('GET', `/agents/${agentId}/usage`)).body.data.payments.held === '0', 20_000);
    expect((await call('GET', `/agents/${agentId}/usage`)).body.data.payments).toMatchObject({ count: 2, spent: '200', held: '0' });
  });

  it('keeps the tool calls and their payments in the history: the next turn sends them to the model', async () => {
    const history = (await call('GET', `/agents/${agentId}/chat/history`)).body.data;
    const paidCall = history.raw.find((entry: any) => entry.role === 'tool' && entry.content.includes('"amount":"100"'));
    expect(paidCall).toMatchObject({ role: 'tool', toolCallId: 'call_1', name: 'pay_and_call' });
    expect(history.raw.some((entry: any) => entry.role === 'assistant' && entry.toolCalls?.[0]?.name === 'pay_and_call')).toBe(true);
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-openai-test-0000' });
    await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: 'pay http://127.0.0.1:9/what-did-i-buy' }] });
    const sent = received.find((r) => r.path === '/openai/v1/chat/completions' && r.body.messages.some((m: any) => m.content === 'pay http://127.0.0.1:9/what-did-i-buy'));
    expect(sent.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => JSON.parse(m.content).payment?.amount)).toContain('100');
  });

  it('releases the whole hold when a tool call fails before anything is signed', async () => {
    await call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '500' });
    const spent = (await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent;
    // Nothing listens there: the upstream cannot be reached, so no challenge and no signature.
    const failed = await call('POST', `/agents/${agentId}/chat`, { session: 'bad-url', messages: [{ role: 'user', content: 'pay http://127.0.0.1:9/nothing' }] });
    expect(failed.body.data.text).toContain('"paid":false');
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent).toBe(spent);
    const [hold] = await app.ctx.database.query<{ status: string; amount: string }>(sql`select status, amount from agent_payment_holds where agent_id = ${agentId} order by created_at desc limit 1`);
    expect(hold).toEqual({ status: 'released', amount: String(500n - BigInt(spent)) });
  });

  it('holds a signed payment whose outcome is unknown at its price, and spends it when the chain settles it', async () => {
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/resource`;
    const ping = `${app.urls.api}/x402-test/ping`;
    const budget = (await call('GET', `/agents/${agentId}/budget`)).body.data;
    const answered = await call('POST', `/agents/${agentId}/chat`, { session: 'unknown', messages: [{ role: 'user', content: `pay ${url}` }] });
    expect(JSON.parse(answered.body.data.text.replace(/^tool said: /, ''))).toMatchObject({ status: 200, payment: { status: 'unknown', amount: '100' } });
    // Held at the price, not at all that was left; nothing moved yet.
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent).toBe(String(BigInt(budget.paymentSpent) + 100n));
    expect((await call('GET', `/agents/${agentId}/usage`)).body.data.payments).toMatchObject({ held: '100' });

    // The signature reaches the real seller, which settles it; the wallets reconciler sees the transfer, the hold follows.
    expect((await fetch(ping, { headers: { 'payment-signature': kept! } })).status).toBe(200);
    const loopOf = (module: string, name: string) => app.modules.find((m) => m.name === module)!.loops!.find((l) => l.name === name)!;
    await expect
      .poll(async () => {
        await loopOf('wallets', 'wallets.payments-reconcile').run(new AbortController().signal);
        await loopOf('agents', 'agents.payment-holds').run(new AbortController().signal);
        return (await call('GET', `/agents/${agentId}/usage`)).body.data.payments;
      }, { timeout: 20_000 })
      .toMatchObject({ held: '0', spent: '300' });
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data.paymentSpent).toBe(String(BigInt(budget.paymentSpent) + 100n));
  });

  it("withdraws USDG from the agent's wallet to an address its user names", async () => {
    const wallet = (await call('GET', `/agents/${agentId}/budget`)).body.data.wallet.address as `0x${string}`;
    const to = '0x000000000000000000000000000000000000bEEF';
    const balance = await app.ctx.chain.devchain!.balanceOf(wallet);
    // Amounts at least AGENT_WITHDRAW_MIN_AMOUNT (default 10000): test/agents/withdraw-limits.test.ts tries smaller.
    const sent = await call('POST', `/agents/${agentId}/wallet/withdraw`, { to, amount: '25000' });
    expect(sent.status).toBe(200);
    expect(sent.body.data.transfer).toMatchObject({ status: 'settled', amount: '25000', payTo: to, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(balance - 25000n);
    expect(await app.ctx.chain.devchain!.balanceOf(to)).toBe(25000n);

    // More than the wallet holds: the facilitator refuses it and nothing moves.
    const tooMuch = await call('POST', `/agents/${agentId}/wallet/withdraw`, { to, amount: String(balance) });
    expect(tooMuch.body.data.transfer).toMatchObject({ status: 'failed', transaction: null });
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(balance - 25000n);
    const badChecksum = '0x000000000000000000000000000000000000BeeF';
    const zero = `0x${'0'.repeat(40)}`;
    for (const body of [{ to, amount: '0' }, { to: 'not-an-address', amount: '1' }, { to, amount: '-1' }, { to: wallet, amount: '1' }, { to, amount: '1', extra: true }, { to: badChecksum, amount: '1' }, { to: zero, amount: '1' }]) {
      expect((await call('POST', `/agents/${agentId}/wallet/withdraw`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await call('POST', `/agents/${agentId}/wallet/withdraw`, { to, amount: '1' }, await app.identityToken('thief'))).status).toBe(404);

    // With an Idempotency-Key, a retry (or a copy at the same moment) answers the same transfer: sent once.
    const keyed = (amount: string, key = 'withdraw-0001') =>
      fetch(`${app.urls.api}/agents/${agentId}/wallet/withdraw`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ to, amount }),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const before = await app.ctx.chain.devchain!.balanceOf(wallet);
    const [first, copy] = await Promise.all([keyed('12000'), keyed('12000')]);
    const retry = await keyed('12000');
    const answered = [first, copy].filter((r) => r.status === 200);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    for (const other of [first, copy].filter((r) => r.status !== 200)) expect(other.body.data, JSON.stringify(other)).toMatchObject({ reason: "transfer_in_progress" });
    expect(retry.body.data.transfer).toMatchObject({ id: answered[0]!.body.data.transfer.id, status: 'settled', amount: '12000' });
    expect(await app.ctx.chain.devchain!.balanceOf(wallet)).toBe(before - 12000n);
    expect((await keyed('13000')).body.data).toMatchObject({ reason: 'idempotency_key_reused' });
    expect((await keyed('12000', 'short')).status).toBe(400);

    // Deleting the agent would strand what its wallet holds: refused until it is withdrawn.
    expect((await call('DELETE', `/agents/${agentId}`)).body.data).toMatchObject({ reason: 'agent_wallet_not_empty' });
    expect((await call('GET', '/agents')).body.data.map((a: { id: string }) => a.id)).toContain(agentId);
  });

  it("takes the tool's payments only from the agent's current runtime", async () => {
    const answer = await fetch(`${app.urls.api}/agents/${agentId}/runtime/pay-and-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${app.urls.api}/x402-test/ping` }),
    });
    expect(answer.status).toBe(401);
  });
});
