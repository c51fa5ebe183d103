// Chat turns streamed as Server-Sent Events from each provider's own streaming protocol (stand-ins over real
// HTTP), through the runtime and the service; and the daily token budget under parallel sessions: 20 chats at
// once against a budget for 5 answer 5 and refuse 15, and the day's use ends exactly at the budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { estimateInputTokens } from '../../src/agent-runtime/models.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startProviderStandIn } from './provider-stand-in.js';

const keys = { openai: 'sk-openai-stream-0123456789', anthropic: 'sk-ant-stream-abcdefghij', openrouter: 'sk-or-stream-9876543210' };
// Each call costs exactly what the runtime reserves for it: its request as the tokenizer counts it (OpenAI's
// models: no margin) and its output cap.
const standIn = await startProviderStandIn({ keys, usage: async (body) => ({ input: await estimateInputTokens(body, 1), output: body.max_tokens }), wordDelayMs: 5 });
let app: TestApp;
let agentId: string;
let token: string;

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A streamed chat: the events in the order they came, and when the first delta arrived. */
async function streamChat(body: unknown, signal?: AbortSignal) {
  const response = await fetch(`${app.urls.api}/agents/${agentId}/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(body),
    signal,
  });
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return { status: response.status, json: (await response.json()) as any, events: [] };
  const events: Array<{ event: string; data: any }> = [];
  const text = await response.text();
  for (const block of text.split('\n\n').filter(Boolean)) {
    events.push({ event: /^event: (.*)$/m.exec(block)![1]!, data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) });
  }
  return { status: response.status, json: null, events };
}

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'], env: standIn.env });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'streamer', cents: 1000, note: 'test' });
  token = await app.identityToken('streamer');
  agentId = (await call('POST', '/agents', { name: 'streamer', type: 'runtime_a' })).body.data.agent.id;
  await app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === 'agents.deploy')!.run(new AbortController().signal);
  // A small output cap keeps each reservation small.
  expect((await call('PUT', `/agents/${agentId}/config`, { botSettings: { maxOutputTokens: 16 } })).status).toBe(200);
});
afterAll(async () => {
  await app?.close();
  await standIn.close();
});

describe('streamed chat', () => {
  it.each([
    ['openai', 'openai says: stream me', 'chat.completion'],
    ['anthropic', 'anthropic says: stream me', 'message'],
    ['openrouter', 'openrouter says: stream me', 'chat.completion'],
  ] as const)('streams a %s turn as delta events, then done with the JSON answer, stored in the history', async (provider, text, rawType) => {
    await call('PUT', `/agents/${agentId}/providers`, { provider, apiKey: keys[provider] });
    const streamed = await streamChat({ session: `s-${provider}`, messages: [{ role: 'user', content: 'stream me' }] });
    expect(streamed.status).toBe(200);
    const deltas = streamed.events.filter((e) => e.event === 'delta');
    expect(deltas.length).toBeGreaterThan(2);
    expect(deltas.map((e) => e.data.text).join('')).toBe(text);
    expect(streamed.events.at(-1)).toEqual({ event: 'done', data: { message: { role: 'assistant', content: text }, text, raw: expect.anything() } });
    const raw = streamed.events.at(-1)!.data.raw;
    expect(raw.object ?? raw.type).toBe(rawType);
    expect(standIn.received.at(-1)!.body.stream).toBe(true);
    expect((await call('GET', `/agents/${agentId}/chat/history?session=s-${provider}`)).body.data.messages).toEqual([
      { role: 'user', content: 'stream me' },
      { role: 'assistant', content: text },
    ]);
  });

  it('answers a refusal before any text as a plain error: the provider refusing the key', async () => {
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-not-the-key-0000' });
    const refused = await streamChat({ session: 'refused', messages: [{ role: 'user', content: 'hi' }] });
    expect(refused.status).toBe(502);
    expect(refused.json).toMatchObject({ code: 1011, data: { reason: 'provider_failed', providerStatus: 401 } });
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: keys.openai });
  });

  it('completes a turn into the history when the client goes away mid-stream', async () => {
    const controller = new AbortController();
    const response = await fetch(`${app.urls.api}/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ session: 'gone', messages: [{ role: 'user', content: 'a long answer please' }] }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('event: delta');
    controller.abort();
    await expect
      .poll(async () => (await call('GET', `/agents/${agentId}/chat/history?session=gone`)).body.data.messages.at(-1), { timeout: 10_000 })
      .toEqual({ role: 'assistant', content: 'openai says: a long answer please' });
  });
});

describe('the daily token budget under parallel sessions', () => {
  it('admits 5 of 20 parallel chats against a budget for 5; the rest are refused without a provider call', async () => {
    await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: 10_000_000 });
    const before = (await call('GET', `/agents/${agentId}/budget`)).body.data.usedToday;
    // One chat of the race's size costs exactly its reservation.
    expect((await call('POST', `/agents/${agentId}/chat`, { session: 'race-probe', messages: [{ role: 'user', content: 'race' }] })).status).toBe(200);
    const perChat = (await call('GET', `/agents/${agentId}/budget`)).body.data.usedToday - before;
    expect(perChat).toBeGreaterThan(16);
    const start = before + perChat;
    await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: start + 5 * perChat });
    const providerCalls = standIn.received.length;

    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call('POST', `/agents/${agentId}/chat`, { session: `race-${String(i).padStart(2, '0')}`, messages: [{ role: 'user', content: 'race' }] })));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    expect(standIn.received.length - providerCalls).toBe(5);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data).toMatchObject({ dailyTokens: start + 5 * perChat, usedToday: start + 5 * perChat });
    expect((await call('GET', `/agents/${agentId}/usage`)).body.data.tokens.today).toBe(start + 5 * perChat);
  });
});
