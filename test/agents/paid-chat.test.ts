// An agent's chat sold per token (issue 47), end to end on the devchain: the owner sets a price; a buyer pays one turn
// with an `upto` permit from its own wallet — the official @x402/evm upto client, and a Tollgate wallet's pay-and-call —
// the agent's runtime runs the turn against a provider stand-in speaking OpenAI's wire protocol (which reports the
// tokens), and the settle takes exactly tokens × price. Balances and transfers are read from the chain.
import { x402Client, x402HTTPClient } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentRequired } from '@x402/core/types';
import { UptoEvmScheme } from '@x402/evm/upto/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { sql } from 'drizzle-orm';
import { createWalletClient, encodeFunctionData, http, parseAbi, type Address, type Hash } from 'viem';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { rpcCall } from '../../src/chain/rpc.js';
import { PERMIT2_ADDRESS } from '../../src/chain/x402-contracts.js';
import { NETWORK, permit2Payer, signPermit, transfersTo } from '../facilitator/permit2-support.js';
import type { TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../x402/support.js';
import { buildWalletsApp, call as walletCall, freePort, waitFor } from '../wallets/helpers.js';
import { AgentSecrets } from '../../src/modules/agents/agent-secrets.js';
import { startProviderStandIn } from './provider-stand-in.js';

const keys = { openai: 'sk-openai-paid-0123456789', anthropic: 'sk-ant-paid-abcdefghij', openrouter: 'sk-or-paid-9876543210' };
/** What the provider reports per call (each test sets it); `hold` keeps the answer back until released. */
let reported = { input: 1000, output: 13 };
let hold: Promise<void> | null = null;
const standIn = await startProviderStandIn({
  keys,
  usage: async () => {
    if (hold) await hold;
    return reported;
  },
});
let app: TestApp;
let token: string;
let agentId: string;
const payTo = randomAddress();
const PRICE = 1234n;
const CAP = 16_000;
const MAXIMUM = (BigInt(CAP) * PRICE + 999n) / 1000n; // 19744
const usdg = () => app.ctx.chain.devchain!;
const url = () => `${app.urls.api}/agents/${agentId}/paid-chat`;
const messages = [{ role: 'user', content: 'how much is a token?' }];

async function call(method: string, path: string, body?: unknown, as: string | null = token) {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { ...(as ? { authorization: `Bearer ${as}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

const uptoClient = (payer: Awaited<ReturnType<typeof permit2Payer>>, max = MAXIMUM) =>
  x402Client.fromConfig({
    schemes: [{ network: NETWORK, client: new UptoEvmScheme(payer) }],
    spendControls: { allowedAssets: [{ network: NETWORK, asset: app.ctx.chain.asset.address, maxAmountPerPayment: max.toString() }] },
  });

async function challenge(): Promise<PaymentRequired> {
  const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) });
  expect(res.status).toBe(402);
  return decodePaymentRequiredHeader(res.headers.get('payment-required')!) as PaymentRequired;
}

const paidChat = (header: string) => fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify({ messages }) });
const providerCalls = () => standIn.received.length;
const turnsOf = async () => (await app.ctx.database.query<{ status: string; amount: string | null; tokens: number | null }>(sql`select status, amount::text, tokens from agent_paid_turns where agent_id = ${agentId} order by created_at`));

beforeAll(async () => {
  const apiPort = await freePort();
  app = await buildWalletsApp({ env: { ...standIn.env, API_PORT: String(apiPort), PAY_AND_CALL_ALLOW_HOSTS: `127.0.0.1:${apiPort},127.0.0.1` } });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'seller', cents: 2000, note: 'test' });
  token = await app.identityToken('seller');
  agentId = (await call('POST', '/agents', { name: 'oracle', type: 'runtime_a' })).body.data.agent.id;
  await app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === 'agents.deploy')!.run(new AbortController().signal);
  await waitFor(async () => (await call('GET', `/agents/${agentId}`)).body.data.status === 'running');
  expect((await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: keys.openai })).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await standIn.close();
});

describe("the owner's price", () => {
  it('refuses bad input in the envelope shape, changing nothing', async () => {
    for (const pricePer1kTokens of ['0', '-5', '1.5', 'ten', '', 12]) {
      const answer = await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens, payTo });
      expect(answer.status, String(pricePer1kTokens)).toBe(400);
      expect(answer.body).toMatchObject({ code: 1000, data: expect.anything() });
    }
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5', payTo, maxTokensPerTurn: 10 })).status).toBe(400);
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5', payTo: '0x0000000000000000000000000000000000000000' })).status).toBe(400);
    // A maximum below the least a payment settles (100 units): it could never be paid.
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '1', maxTokensPerTurn: 99_000, payTo })).body).toMatchObject({ code: 1000, data: { reason: 'price_below_minimum', minAmount: '100' } });
    // A runtime_a agent has no wallet to default to.
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5' })).body).toMatchObject({ code: 1000, data: { reason: 'pay_to_required' } });
    expect((await call('GET', `/agents/${agentId}/chat/price`)).body).toEqual({ code: 0, message: 'ok', data: null });
    // Not for sale yet: the public route does not know it.
    const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 1004, data: { reason: 'agent_not_found' } });
  });

  it("another user, an unknown agent, or no sign-in: nobody else's agent is priced", async () => {
    const stranger = await app.identityToken('stranger');
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5', payTo }, stranger)).body).toMatchObject({ code: 1004, data: { reason: 'agent_not_found' } });
    expect((await call('GET', `/agents/${agentId}/chat/price`, undefined, stranger)).status).toBe(404);
    expect((await call('PUT', `/agents/${crypto.randomUUID()}/chat/price`, { pricePer1kTokens: '5', payTo })).status).toBe(404);
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5', payTo }, null)).body).toMatchObject({ code: 1001 });
    expect((await call('GET', `/agents/${agentId}/chat/price`)).body.data).toBeNull();
    const unknown = await fetch(`${app.urls.api}/agents/${crypto.randomUUID()}/paid-chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) });
    expect(unknown.status).toBe(404);
  });

  it('sets the price; the public route answers an upto challenge for the price of the cap', async () => {
    const set = await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: CAP, payTo });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ pricePer1kTokens: '1234', maxTokensPerTurn: CAP, maximum: MAXIMUM.toString(), payTo, network: NETWORK });
    const supported = await app.ctx.x402.facilitator().getSupported();
    expect((await challenge()).accepts).toEqual([
      expect.objectContaining({ scheme: 'upto', network: NETWORK, amount: MAXIMUM.toString(), payTo, asset: app.ctx.chain.asset.address, extra: expect.objectContaining({ assetTransferMethod: 'permit2', facilitatorAddress: supported.signers['eip155:*']![0] }) }),
    ]);
    // A bad body is refused before any challenge.
    const bad = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [] }) });
    expect(bad.status).toBe(400);
  });
});

describe('a buyer pays a turn with the official @x402/evm upto client', () => {
  it('pays exactly tokens × price (rounded up), not the maximum; the payee gets it', async () => {
    reported = { input: 1000, output: 13 };
    const payer = await permit2Payer(app, '1');
    const pay = wrapFetchWithPayment(fetch, new x402HTTPClient(uptoClient(payer)));
    const [before, payeeBefore] = [await usdg().balanceOf(payer.address), await usdg().balanceOf(payTo)];
    const res = await pay(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    const cost = (1013n * PRICE + 999n) / 1000n; // 1251
    expect(body.data).toMatchObject({ text: 'openai says: how much is a token?', usage: { tokens: 1013, pricePer1kTokens: '1234', amount: cost.toString(), maximum: MAXIMUM.toString() } });
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response')!);
    expect(settlement).toMatchObject({ success: true, amount: cost.toString() });
    expect(before - (await usdg().balanceOf(payer.address))).toBe(cost);
    expect((await usdg().balanceOf(payTo)) - payeeBefore).toBe(cost);
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([cost]);
    // The runtime was told the cap.
    const sent = await app.ctx.database.query<{ session: string }>(sql`select session from agent_turns where agent_id = ${agentId} order by created_at desc limit 1`);
    expect(sent[0]!.session).toBe(`x402:${payer.address}`);
  });

  it('the same permit sent again gets the same answer: no second turn, nothing more moves', async () => {
    reported = { input: 500, output: 7 };
    const payer = await permit2Payer(app, '1');
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    const calls = providerCalls();
    const first = await paidChat(header);
    expect(first.status).toBe(200);
    const firstBody = await first.json();
    const after = await usdg().balanceOf(payer.address);
    // The owner changes the price meanwhile: the permit's turn keeps its own.
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '99', maxTokensPerTurn: CAP, payTo })).status).toBe(200);
    const again = await paidChat(header);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(firstBody);
    expect(providerCalls()).toBe(calls + 1);
    expect(await usdg().balanceOf(payer.address)).toBe(after);
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([(507n * PRICE + 999n) / 1000n]);
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: CAP, payTo })).status).toBe(200);
  });

  it('a permit whose maximum is below the price of the cap is refused (402): nothing runs, nothing moves', async () => {
    const payer = await permit2Payer(app, '1');
    const offered = await challenge();
    const short = { ...offered, accepts: [{ ...offered.accepts[0]!, amount: (MAXIMUM - 1n).toString() }] };
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(short));
    const [calls, turns, before] = [providerCalls(), (await turnsOf()).length, await usdg().balanceOf(payer.address)];
    const res = await paidChat(header);
    expect(res.status).toBe(402);
    expect(((await res.json()) as PaymentRequired).error).toBe('no_matching_payment_requirements');
    expect(providerCalls()).toBe(calls);
    expect((await turnsOf()).length).toBe(turns);
    expect(await usdg().balanceOf(payer.address)).toBe(before);
  });

  it("an owner's price change does not alter a turn in flight", async () => {
    reported = { input: 2000, output: 100 };
    const payer = await permit2Payer(app, '1');
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const calls = providerCalls();
    const inFlight = paidChat(header);
    await waitFor(async () => providerCalls() > calls);
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '5000', maxTokensPerTurn: CAP, payTo })).status).toBe(200);
    hold = null;
    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    const cost = (2100n * PRICE + 999n) / 1000n;
    expect(((await res.json()) as any).data.usage).toMatchObject({ tokens: 2100, pricePer1kTokens: '1234', amount: cost.toString() });
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([cost]);
    // New permits are asked for the new price.
    expect((await challenge()).accepts[0]!.amount).toBe(((BigInt(CAP) * 5000n + 999n) / 1000n).toString());
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: CAP, payTo })).status).toBe(200);
  });

  it("the agent's daily token budget still applies: refused (429), charged nothing, the provider never called", async () => {
    expect((await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: 0 })).status).toBe(200);
    try {
      const payer = await permit2Payer(app, '1');
      const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
      const [calls, before] = [providerCalls(), await usdg().balanceOf(payer.address)];
      const res = await paidChat(header);
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ code: 1009, data: { reason: 'token_budget_exhausted' } });
      expect(decodePaymentResponseHeader(res.headers.get('payment-response')!)).toMatchObject({ success: true, amount: '0' });
      expect(providerCalls()).toBe(calls);
      expect(await usdg().balanceOf(payer.address)).toBe(before);
      expect(await transfersTo(app, payer.address, payTo)).toEqual([]);
      // The permit bought that answer: sent again, the same refusal, still nothing run.
      expect((await paidChat(header)).status).toBe(429);
      expect(providerCalls()).toBe(calls);
    } finally {
      expect((await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: 200_000 })).status).toBe(200);
    }
  });

  it('a turn whose conversation cannot fit the cap is refused by the runtime (413) and costs nothing', async () => {
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: 256, payTo })).status).toBe(200);
    try {
      const payer = await permit2Payer(app, '1');
      const offered = await challenge();
      const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(offered));
      const calls = providerCalls();
      const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify({ messages: [{ role: 'user', content: 'word '.repeat(400) }] }) });
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ code: 1007, data: { reason: 'turn_token_cap_reached', maxTokens: 256 } });
      expect(providerCalls()).toBe(calls);
      expect(await transfersTo(app, payer.address, payTo)).toEqual([]);
    } finally {
      expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: CAP, payTo })).status).toBe(200);
    }
  });
});

describe('races and lost answers', () => {
  it('one permit sent 10 times at once runs one turn and moves its cost once', async () => {
    reported = { input: 800, output: 20 };
    const payer = await permit2Payer(app, '1');
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    const calls = providerCalls();
    const answers = await Promise.all(Array.from({ length: 10 }, async () => {
      const res = await paidChat(header);
      return { status: res.status, body: (await res.json()) as any };
    }));
    const cost = (820n * PRICE + 999n) / 1000n;
    const served = answers.filter((a) => a.status === 200);
    expect(served.length).toBeGreaterThanOrEqual(1);
    for (const a of served) expect(a.body.data.usage).toMatchObject({ tokens: 820, amount: cost.toString() });
    for (const a of answers.filter((x) => x.status !== 200)) expect(a).toMatchObject({ status: 409, body: { data: { reason: 'paid_turn_in_progress' } } });
    expect(providerCalls()).toBe(calls + 1);
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([cost]);
    // Once the turn is done, the same permit is answered from it.
    const again = await paidChat(header);
    expect(again.status).toBe(200);
    expect(((await again.json()) as any).data.usage.amount).toBe(cost.toString());
  });

  it('a settle lost to an unreachable facilitator, or of unknown outcome, is retried under the same permit for the same tokens, at the price it was signed at', async () => {
    reported = { input: 640, output: 2 };
    const payer = await permit2Payer(app, '1');
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    const calls = providerCalls();
    // The facilitator cannot be reached when the turn is done: 503, nothing moved, the payment record dropped.
    const down = vi.spyOn(app.ctx.x402, 'settle').mockResolvedValueOnce({ kind: 'unavailable', message: 'down' });
    const first = await paidChat(header);
    expect(first.status).toBe(503);
    expect(await first.json()).toMatchObject({ code: 1012, message: expect.stringMatching(/temporarily unavailable/) });
    expect(await transfersTo(app, payer.address, payTo)).toEqual([]);
    // Then an outcome it cannot know (the record stays), and the owner raises the price meanwhile.
    down.mockResolvedValueOnce({ kind: 'unknown', transaction: null, message: 'timeout' });
    const second = await paidChat(header);
    expect(second.status).toBe(503);
    expect(await second.json()).toMatchObject({ code: 1012, message: expect.stringMatching(/do not pay again/) });
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: '7777', maxTokensPerTurn: CAP, payTo })).status).toBe(200);
    down.mockRestore();
    const third = await paidChat(header);
    expect(third.status).toBe(200);
    const cost = (642n * PRICE + 999n) / 1000n;
    expect(((await third.json()) as any).data.usage).toMatchObject({ tokens: 642, pricePer1kTokens: '1234', amount: cost.toString() });
    expect(providerCalls()).toBe(calls + 1);
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([cost]);
    expect((await call('PUT', `/agents/${agentId}/chat/price`, { pricePer1kTokens: PRICE.toString(), maxTokensPerTurn: CAP, payTo })).status).toBe(200);
  });
});

describe('a payer trying its luck', () => {
  it('without the maximum in its wallet: refused (402) before anything runs', async () => {
    const payer = await permit2Payer(app, '0.01'); // 10000 atomic units, below the 19744 maximum
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    const [calls, turns] = [providerCalls(), (await turnsOf()).length];
    const res = await paidChat(header);
    expect(res.status).toBe(402);
    expect(((await res.json()) as PaymentRequired).error).toMatch(/insufficient|balance/i);
    expect(providerCalls()).toBe(calls);
    expect((await turnsOf()).length).toBe(turns);
  });

  it('a permit about to expire (it would buy a turn it cannot pay for) is refused before anything runs', async () => {
    const payer = await permit2Payer(app, '1');
    const offered = (await challenge()).accepts[0]!;
    const chainNow = await app.ctx.chain.blockTime();
    const short = encodePaymentSignatureHeader(await signPermit(payer, offered, { deadline: chainNow + 30n }));
    const [calls, turns] = [providerCalls(), (await turnsOf()).length];
    const res = await paidChat(short);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 1000, data: { reason: 'permit_too_short', minSeconds: 60 } });
    expect(providerCalls()).toBe(calls);
    expect((await turnsOf()).length).toBe(turns);
  });

  it('empties its wallet while the turn runs: the settle fails, so no answer (402); refunded, the same permit pays and gets it', async () => {
    reported = { input: 900, output: 9 };
    const payer = await permit2Payer(app, '1');
    const header = encodePaymentSignatureHeader(await uptoClient(payer).createPaymentPayload(await challenge()));
    let release!: () => void;
    hold = new Promise((resolve) => (release = resolve));
    const calls = providerCalls();
    const inFlight = paidChat(header);
    await waitFor(async () => providerCalls() > calls);
    const elsewhere = randomAddress();
    const balance = await usdg().balanceOf(payer.address);
    const wallet = createWalletClient({ account: payer, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
    const drained = await wallet.writeContract({ address: app.ctx.chain.asset.address, abi: parseAbi(['function transfer(address, uint256) returns (bool)']), functionName: 'transfer', args: [elsewhere, balance] });
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash: drained });
    hold = null;
    release();
    const res = await inFlight;
    expect(res.status).toBe(402);
    const refused = (await res.json()) as any;
    expect(refused).not.toHaveProperty('data');
    expect(JSON.stringify(refused)).not.toContain('openai says');
    expect(await transfersTo(app, payer.address, payTo)).toEqual([]);
    // Funds back: the same permit settles what the turn used and answers it, with no second turn.
    await usdg().fund(payer.address, '1');
    const again = await paidChat(header);
    expect(again.status).toBe(200);
    const cost = (909n * PRICE + 999n) / 1000n;
    expect(((await again.json()) as any).data).toMatchObject({ text: 'openai says: how much is a token?', usage: { tokens: 909, amount: cost.toString() } });
    expect(providerCalls()).toBe(calls + 1);
    expect((await transfersTo(app, payer.address, payTo)).map((t) => t.value)).toEqual([cost]);
  });
});

describe('a runtime_b agent sold per token', () => {
  it("is paid into its own wallet by default, and a buyer's turn offers its model no tool: the buyer cannot make it pay", async () => {
    const toolAgent = (await call('POST', '/agents', { name: 'tool-oracle', type: 'runtime_b' })).body.data.agent.id as string;
    await app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === 'agents.deploy')!.run(new AbortController().signal);
    await waitFor(async () => (await call('GET', `/agents/${toolAgent}`)).body.data.status === 'running');
    expect((await call('PUT', `/agents/${toolAgent}/providers`, { provider: 'openai', apiKey: keys.openai })).status).toBe(200);
    expect((await call('PUT', `/agents/${toolAgent}/budget`, { paymentBudget: '100000' })).status).toBe(200);
    const wallet = (await call('GET', `/agents/${toolAgent}/budget`)).body.data.wallet.address as Address;
    const priced = await call('PUT', `/agents/${toolAgent}/chat/price`, { pricePer1kTokens: '1000' });
    expect(priced.body.data).toMatchObject({ payTo: wallet, maxTokensPerTurn: 16_000, maximum: '16000' });

    reported = { input: 40, output: 2 };
    const payer = await permit2Payer(app, '1');
    const toolUrl = `${app.urls.api}/agents/${toolAgent}/paid-chat`;
    const offered = decodePaymentRequiredHeader((await fetch(toolUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages }) })).headers.get('payment-required')!) as PaymentRequired;
    const header = encodePaymentSignatureHeader(await uptoClient(payer, 16_000n).createPaymentPayload(offered));
    const calls = providerCalls();
    const res = await fetch(toolUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'payment-signature': header }, body: JSON.stringify({ messages: [{ role: 'user', content: `pay ${app.urls.api}/x402-test/ping` }] }) });
    expect(res.status, JSON.stringify(await res.clone().json()).slice(0, 300)).toBe(200);
    expect(providerCalls()).toBe(calls + 1);
    expect(standIn.received.at(-1)!.body.tools).toBeUndefined();
    // 42 tokens cost 42 units: charged the least a settle takes (FACILITATOR_MIN_SETTLE_AMOUNT, 100).
    expect(((await res.json()) as any).data.usage).toMatchObject({ tokens: 42, amount: '100' });
    expect((await transfersTo(app, payer.address, wallet)).map((t) => t.value)).toEqual([100n]);

    // A runtime that offered its tool anyway: the service's pay route pays nothing for a paid turn.
    const [instance] = await app.ctx.database.query<{ id: string; sealed_token: string }>(sql`select id, sealed_token from agent_instances where agent_id = ${toolAgent}`);
    const runtimeToken = new AgentSecrets(app.ctx.config).open(instance!.id, instance!.sealed_token);
    const [paidTurn] = await app.ctx.database.query<{ turn_id: string }>(sql`select turn_id from agent_paid_turns where agent_id = ${toolAgent}`);
    await app.ctx.database.query(sql`update agent_turns set status = 'running' where id = ${paidTurn!.turn_id}`);
    const tool = await fetch(`${app.urls.api}/agents/${toolAgent}/runtime/pay-and-call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${runtimeToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${app.urls.api}/x402-test/ping`, turnId: paidTurn!.turn_id }),
    });
    expect(tool.status).toBe(409);
    expect(await tool.json()).toMatchObject({ data: { reason: 'paid_turn_pays_nothing' } });
    expect((await call('GET', `/agents/${toolAgent}/usage`)).body.data.payments).toEqual({ count: 0, spent: '0', held: '0' });
  });
});

describe("a Tollgate wallet's pay-and-call pays a turn", () => {
  const erc20 = parseAbi(['function approve(address spender, uint256 value) returns (bool)']);
  const rpc = (method: string, params: unknown[]) => rpcCall(app.ctx.chain.rpcUrl, method, params);

  it('pays exactly tokens × price from the wallet; the payment row books what the chain moved', async () => {
    reported = { input: 321, output: 45 };
    const mgmt = await app.mgmtSecret('buyer');
    const created = await walletCall(app, 'POST', '/v1/wallets', mgmt, { externalId: 'chat-buyer', name: 'chat-buyer' });
    const { id, address } = created.body.data.wallet as { id: string; address: Address };
    await usdg().fund(address, '1');
    await rpc('anvil_impersonateAccount', [address]);
    const hash = (await rpc('eth_sendTransaction', [{ from: address, to: app.ctx.chain.asset.address, data: encodeFunctionData({ abi: erc20, functionName: 'approve', args: [PERMIT2_ADDRESS, 10n ** 30n] }) }])) as Hash;
    await rpc('anvil_stopImpersonatingAccount', [address]);
    await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
    const secret = (await walletCall(app, 'POST', `/v1/wallets/${id}/credentials`, mgmt, { name: 'runtime' })).body.data.secret as string;
    const [before, payeeBefore] = [await usdg().balanceOf(address), await usdg().balanceOf(payTo)];
    const answer = await walletCall(app, 'POST', '/v1/wallets/me/pay-and-call', secret, {
      url: url(),
      method: 'POST',
      body: { messages },
      maxPayment: { network: NETWORK, asset: app.ctx.chain.asset.address, amount: MAXIMUM.toString() },
    });
    expect(answer.status).toBe(200);
    const cost = (366n * PRICE + 999n) / 1000n;
    expect(answer.body.data.upstream).toMatchObject({ status: 200, body: { code: 0, data: { text: 'openai says: how much is a token?', usage: { tokens: 366, amount: cost.toString() } } } });
    expect(answer.body.data.payment).toMatchObject({ scheme: 'upto', status: 'settled', amount: cost.toString() });
    expect(before - (await usdg().balanceOf(address))).toBe(cost);
    expect((await usdg().balanceOf(payTo)) - payeeBefore).toBe(cost);
    expect((await transfersTo(app, address, payTo)).map((t) => t.value)).toEqual([cost]);
  });
});
