// Turns that survive a crash (issue 44 item 4): `tollgate serve` as a real process (test/crash/harness.ts), a
// runtime_b agent whose model asks its tool to pay the service's own /x402-test/ping, and the service SIGKILLed
// in the middle of that paid tool call (the wallets' crash points: signed and not sent; the upstream paid and
// answered, the row not final) under a JSON chat and a streamed one. Restarted on the same data, the turn is
// `failed` and visible with the user's message and the payment it made, the payment is listed, the money moved
// at most once as the chain says, and the budgets agree: `usedToday` (the runtime's count on its volume) equals
// `/usage`'s today, and the payment budget holds exactly what the payments still hold or spent. And a streamed
// client gets `event: error` when the service is shut down under it (SIGTERM), the turn failed too.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Address } from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import type { CrashPoint } from '../../src/platform/crash-points.js';
import { admin, chainRpc, crashHarness, eventually, freshData, serve, stop, transfersOf, type Data, type Instance } from '../crash/harness.js';
import { readPaymentRequired } from '../../src/x402/client.js';

const { pointDone } = crashHarness('agents turn crash');

// The model (OpenAI's wire, streamed or not): "pay <url>" streams "Paying. " then calls the tool; a tool result
// is answered "tool said: <result>"; "slow" streams "Thinking" and then takes 20 s; anything else is echoed.
const model = http.createServer(async (request, response) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString());
  const last = body.messages.at(-1);
  const usage = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };
  const paying = last.role === 'user' && /^pay \S+/.test(last.content);
  const text = last.role === 'tool' ? `tool said: ${last.content}` : paying ? 'Paying. ' : last.content === 'slow' ? 'Thinking' : `ok: ${last.content}`;
  const toolCall = { id: 'call_1', type: 'function', function: { name: 'pay_and_call', arguments: JSON.stringify({ url: String(last.content).slice(4) }) } };
  if (!body.stream) {
    const message = paying ? { role: 'assistant', content: null, tool_calls: [toolCall] } : { role: 'assistant', content: text };
    return response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'c', object: 'chat.completion', model: body.model, choices: [{ index: 0, message, finish_reason: paying ? 'tool_calls' : 'stop' }], usage }));
  }
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: object, finish: string | null = null) => response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
  chunk({ role: 'assistant', content: text });
  if (last.content === 'slow') await new Promise((resolve) => setTimeout(resolve, 20_000));
  if (paying) chunk({ tool_calls: [{ index: 0, ...toolCall }] }, 'tool_calls');
  else chunk({}, 'stop');
  response.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: body.model, choices: [], usage })}\n\n`);
  response.end('data: [DONE]\n\n');
});
await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
const modelEnv = { AGENT_OPENAI_BASE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}/openai/v1`, LOG_LEVEL: 'fatal', AGENT_TURN_STALE_SECONDS: '4' };
afterAll(() => {
  model.closeAllConnections();
  model.close();
});

interface Owner {
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  chat(agentId: string, session: string, content: string, stream: boolean): Promise<Response>;
}

function ownerAt(instance: () => Instance, token: string): Owner {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${instance().api}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  };
  const chat = (agentId: string, session: string, content: string, stream: boolean) =>
    fetch(`${instance().api}/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(stream ? { accept: 'text/event-stream' } : {}) },
      body: JSON.stringify({ session, messages: [{ role: 'user', content }] }),
    });
  return { call, chat };
}

/** Credits and a token from the instance's admin socket, then an agent of `type`, running, with an OpenAI key. */
async function runningAgent(data: Data, instance: () => Instance, type: 'runtime_a' | 'runtime_b') {
  await admin(data.dataDir, 'credits.grant', { sub: 'crash-owner', cents: 1000 });
  const { token } = await admin(data.dataDir, 'dev.token', { sub: 'crash-owner' });
  const owner = ownerAt(instance, token!);
  const bought = await owner.call('POST', '/agents', { name: 'crasher', type });
  expect(bought.status, JSON.stringify(bought.body)).toBe(201);
  const agentId = bought.body.data.agent.id as string;
  const running = await eventually(async () => (await owner.call('GET', `/agents/${agentId}`)).body?.data?.status === 'running', 45_000);
  expect(running, 'the agent was not deployed').toBe(true);
  expect((await owner.call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-openai-crash-0000' })).status).toBe(200);
  return { owner, agentId };
}

/** The events of a Server-Sent Events body read so far, until `until` says stop (or the body ends or breaks). */
async function readEvents(response: Response, until: (events: Array<{ event: string; data: any }>) => boolean) {
  const events: Array<{ event: string; data: any }> = [];
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        events.push({ event: /^event: (.*)$/m.exec(block)![1]!, data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) });
      }
      if (until(events)) return { events, broke: false };
    }
    return { events, broke: false };
  } catch {
    return { events, broke: true };
  }
}

describe('kill -9 in the middle of a paid tool call', () => {
  it.each([
    ['a JSON chat', 'pay-and-call.after-sign', false],
    ['a streamed chat', 'pay-and-call.after-upstream', true],
  ] as Array<[string, CrashPoint, boolean]>)('%s, the service killed at %s: after the restart the turn is failed and visible, its payment listed, budgets agree', async (_what, point, stream) => {
    const data = await freshData();
    let current = await serve(data, point, modelEnv);
    const { owner, agentId } = await runningAgent(data, () => current, 'runtime_b');
    const budget = (await owner.call('PUT', `/agents/${agentId}/budget`, { paymentBudget: '500' })).body.data;
    const payer = budget.wallet.address as Address;
    await admin(data.dataDir, 'dev.fund', { address: payer, amount: '1' });
    const ping = `${current.api}/x402-test/ping`;
    const challenge = await fetch(ping);
    const payTo = readPaymentRequired((n) => challenge.headers.get(n), await challenge.json()).accepts[0]!.payTo as Address;

    // The turn: the model streams a little, then its tool pays; the service dies inside that payment.
    const content = `pay ${ping}`;
    const response = await owner.chat(agentId, 'paid', content, stream).catch(() => null);
    if (stream) {
      expect(response?.status).toBe(200);
      const read = await readEvents(response!, () => false);
      expect(read.events.map((e) => e.event)).toEqual(['delta']);
      expect(read.events[0]!.data).toEqual({ text: 'Paying. ' });
      expect(read.broke).toBe(true);
    } else expect(response).toBeNull();
    expect(await current.exited).toBe(137);

    current = await serve(data, undefined, modelEnv);
    try {
      const moved = await transfersOf(current.rpc, payer, payTo);
      expect(moved.transfers).toBe(point === 'pay-and-call.after-upstream' ? 1 : 0);
      // The sweep fails the turn once its heartbeat is stale (its node is gone); it is kept, visible, with the message.
      const history = async () => (await owner.call('GET', `/agents/${agentId}/chat/history?session=paid`)).body?.data;
      const failed = await eventually(async () => ((await history())?.turns?.[0]?.status === 'failed' ? history() : null), 45_000);
      expect(failed, JSON.stringify(await history())).not.toBeNull();
      expect(failed.messages).toEqual([{ role: 'user', content }]);
      expect(failed.turns).toEqual([expect.objectContaining({ status: 'failed', error: expect.stringMatching(/^interrupted/), payments: [expect.objectContaining({ amount: '100', payTo, kind: 'tool', session: 'paid' })] })]);
      const turnId = failed.turns[0].id;

      // Listed for the owner, ending as the chain says: settled with its transfer, or failed once its authorization expired.
      const payments = async () => (await owner.call('GET', `/agents/${agentId}/payments`)).body.data as any[];
      expect(await payments()).toEqual([expect.objectContaining({ turnId, amount: '100', host: new URL(ping).hostname })]);
      if (moved.transfers === 1) {
        const settled = await eventually(async () => ((await payments())[0].status === 'settled' ? payments() : null), 30_000);
        expect(settled?.[0], JSON.stringify(await payments())).toMatchObject({ status: 'settled', transaction: moved.tx });
      } else {
        await chainRpc(current.rpc, 'evm_increaseTime', [3_700]);
        await chainRpc(current.rpc, 'evm_mine', []);
        const ended = await eventually(async () => ((await payments())[0].status === 'failed' ? payments() : null), 30_000);
        expect(ended?.[0], JSON.stringify(await payments())).toMatchObject({ status: 'failed', transaction: null });
      }

      // The budgets agree. Tokens: the runtime counted the call that asked for the tool on its volume, though the
      // turn never answered; the stored count mirrors it. Payments: what the budget holds is what was spent or held.
      const agreed = await eventually(async () => {
        // Usage first: once it shows no hold open, the hold's close (one transaction with the budget) is visible to the next read.
        const usage = await owner.call('GET', `/agents/${agentId}/usage`);
        const tokens = await owner.call('GET', `/agents/${agentId}/budget`);
        if (tokens.status !== 200 || usage.status !== 200 || usage.body.data.payments.held !== '0') return null;
        return { tokens: tokens.body.data, usage: usage.body.data };
      }, 30_000);
      expect(agreed, 'the runtime did not come back, or a hold stayed open').not.toBeNull();
      expect(agreed!.tokens.usedToday).toBeGreaterThanOrEqual(10);
      expect(agreed!.usage.tokens.today).toBe(agreed!.tokens.usedToday);
      expect(agreed!.usage.payments).toEqual({ count: moved.transfers, spent: String(100 * moved.transfers), held: '0' });
      expect(agreed!.tokens.paymentSpent).toBe(String(100 * moved.transfers));
      // Money moved at most once, and nothing more since.
      expect(await transfersOf(current.rpc, payer, payTo)).toEqual(moved);

      // The agent goes on: a new turn answers, and the failed one is not sent to the model again.
      const again = await owner.chat(agentId, 'paid', 'still there?', false);
      expect(((await again.json()) as any).data.text).toBe('ok: still there?');
      expect((await history()).turns.map((t: { status: string }) => t.status)).toEqual(['failed', 'completed']);
    } finally {
      await stop(current);
    }
    pointDone();
  }, 240_000);
});

describe('a shutdown under a streamed chat', () => {
  it('tells the streamed client (event: error, service_stopping), stops cleanly, and the turn is failed after the restart', async () => {
    const data = await freshData();
    let current = await serve(data, undefined, modelEnv);
    const { owner, agentId } = await runningAgent(data, () => current, 'runtime_a');
    const response = await owner.chat(agentId, 'long', 'slow', true);
    expect(response.status).toBe(200);
    let stopping: Promise<void> | null = null;
    const read = await readEvents(response, (events) => {
      // The first text is out: the turn is under way. Stop the service under it.
      if (events.length === 1 && !stopping) stopping = stop(current);
      return events.some((e) => e.event === 'error' || e.event === 'done');
    });
    expect(read.events.map((e) => e.event)).toEqual(['delta', 'error']);
    expect(read.events[1]!.data).toMatchObject({ code: 1012, data: { reason: 'service_stopping' } });
    await stopping;
    expect(await current.exited).toBe(0);

    current = await serve(data, undefined, modelEnv);
    try {
      const history = (await owner.call('GET', `/agents/${agentId}/chat/history?session=long`)).body.data;
      expect(history.messages).toEqual([{ role: 'user', content: 'slow' }]);
      expect(history.turns).toEqual([expect.objectContaining({ status: 'failed', error: expect.stringMatching(/^service_stopping/) })]);
    } finally {
      await stop(current);
    }
    pointDone();
  }, 180_000);
});
