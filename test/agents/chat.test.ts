// Chat with a hosted agent end to end: the agent bought and deployed as its own runtime process, a provider
// key set (sealed, listed masked), chats relayed by the runtime to stand-ins of OpenAI, Anthropic and
// OpenRouter that speak their real HTTP APIs (and check what they are sent), history kept per session on
// the runtime's volume, and nobody else's agent reachable.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** The three providers' chat endpoints, as their APIs answer: 401 for an unknown key, else a reply naming the provider. */
function providerStandIn(keys: Record<string, string>) {
  const received: Received[] = [];
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString());
    received.push({ path: request.url!, headers: request.headers, body });
    const reply = (status: number, payload: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    const last = body.messages.at(-1).content;
    if (request.url === '/anthropic/v1/messages') {
      if (request.headers['x-api-key'] !== keys.anthropic || request.headers['anthropic-version'] !== '2023-06-01') return reply(401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
      return reply(200, { id: 'msg_1', type: 'message', role: 'assistant', model: body.model, content: [{ type: 'text', text: `anthropic says: ${last}` }], stop_reason: 'end_turn', usage: { input_tokens: 12, output_tokens: 4 } });
    }
    const provider = request.url === '/openai/v1/chat/completions' ? 'openai' : request.url === '/openrouter/api/v1/chat/completions' ? 'openrouter' : null;
    if (!provider) return reply(404, { error: { message: 'unknown route' } });
    if (request.headers.authorization !== `Bearer ${keys[provider]}`) return reply(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } });
    return reply(200, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: `${provider} says: ${last}` }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 },
    });
  });
  return { server, received };
}

const keys = { openai: 'sk-openai-test-0123456789', anthropic: 'sk-ant-test-abcdefghij', openrouter: 'sk-or-test-9876543210' };
const standIn = providerStandIn(keys);
let app: TestApp;
let agentId: string;
let token: string;

async function call(method: string, path: string, body?: unknown, as = token) {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${as}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

beforeAll(async () => {
  await new Promise<void>((resolve) => standIn.server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(standIn.server.address() as AddressInfo).port}`;
  app = await buildTestApp({
    roles: ['api'],
    env: { AGENT_OPENAI_BASE_URL: `${base}/openai/v1`, AGENT_ANTHROPIC_BASE_URL: `${base}/anthropic/v1`, AGENT_OPENROUTER_BASE_URL: `${base}/openrouter/api/v1` },
  });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'chatter', cents: 1000, note: 'test' });
  token = await app.identityToken('chatter');
  agentId = (await call('POST', '/agents', { name: 'assistant', type: 'runtime_a' })).body.data.agent.id;
  const deploy = app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === 'agents.deploy')!;
  await deploy.run(new AbortController().signal);
});
afterAll(async () => {
  await app?.close();
  standIn.server.close();
});

describe('agent chat', () => {
  it("reads the agent's configuration", async () => {
    const [listed] = (await call('GET', '/agents')).body.data;
    expect(listed.status).toBe('running');
    const config = await call('GET', `/agents/${agentId}/config`);
    expect(config.status).toBe(200);
    expect(config.body.data).toEqual({ createdAt: listed.createdAt, id: agentId, instanceId: listed.runtimeInstance.id, updatedAt: expect.any(String), models: null, botSettings: null });
  });

  it('needs a provider; keeps keys sealed and lists them masked', async () => {
    expect((await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: 'hi' }] })).body).toMatchObject({ code: 1005, data: { reason: 'provider_not_configured' } });
    const set = await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: keys.openai });
    expect(set).toEqual({ status: 200, body: { code: 0, message: 'ok', data: { provider: 'openai', apiKey: 'sk-o…6789' } } });
    expect((await call('GET', `/agents/${agentId}/providers`)).body.data).toEqual([{ provider: 'openai', apiKey: 'sk-o…6789' }]);
    const stored = await app.ctx.database.query<{ sealed_key: string }>(sql`select sealed_key from agent_provider_keys where agent_id = ${agentId}`);
    expect(stored[0]!.sealed_key).not.toContain(keys.openai);
    for (const body of [{ provider: 'mistral', apiKey: 'x' }, { provider: 'openai', apiKey: '' }, { provider: 'openai' }]) {
      expect((await call('PUT', `/agents/${agentId}/providers`, body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('chats through OpenAI chat completions, keeping each session apart', async () => {
    const first = await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }] });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({ message: { role: 'assistant', content: 'openai says: hello' }, text: 'openai says: hello', raw: expect.objectContaining({ object: 'chat.completion' }) });
    const sent = standIn.received.at(-1)!;
    expect(sent.path).toBe('/openai/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${keys.openai}`);
    expect(sent.body).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }] });
    expect(sent.body.tools).toBeUndefined(); // runtime_a is a chat assistant: no tools

    await call('POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: 'again' }] });
    expect(standIn.received.at(-1)!.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'openai says: hello' },
      { role: 'user', content: 'again' },
    ]);
    await call('POST', `/agents/${agentId}/chat`, { session: 'work', messages: [{ role: 'user', content: 'other topic' }] });
    expect(standIn.received.at(-1)!.body.messages).toEqual([{ role: 'user', content: 'other topic' }]);

    const history = await call('GET', `/agents/${agentId}/chat/history`);
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'openai says: hello' },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: 'openai says: again' },
    ];
    // Each entry names its turn; the turns are listed with their end, tokens and request id.
    const [turn1, turn2] = history.body.data.turns;
    const turnOf = [turn1.id, turn1.id, turn1.id, turn2.id, turn2.id];
    expect(history.body.data).toEqual({ messages, raw: messages.map((m, i) => ({ ...m, turnId: turnOf[i] })), turns: [turn1, turn2] });
    for (const turn of [turn1, turn2]) {
      expect(turn).toEqual({ id: expect.any(String), status: 'completed', error: null, requestId: expect.any(String), tokens: 13, createdAt: expect.any(String), finishedAt: expect.any(String), payments: [] });
    }
    expect((await call('GET', `/agents/${agentId}/chat/history?session=work`)).body.data.messages).toHaveLength(2);
    expect((await call('GET', `/agents/${agentId}/chat/history?session=empty`)).body.data).toEqual({ messages: [], raw: [], turns: [] });
  });

  it('chats through Anthropic messages and OpenRouter, whichever key was set last', async () => {
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'anthropic', apiKey: keys.anthropic });
    const viaAnthropic = await call('POST', `/agents/${agentId}/chat`, { session: 'a', messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'bonjour' }] });
    expect(viaAnthropic.body.data).toMatchObject({ text: 'anthropic says: bonjour', raw: { type: 'message' } });
    const sent = standIn.received.at(-1)!;
    expect(sent.headers['x-api-key']).toBe(keys.anthropic);
    expect(sent.body).toEqual({ model: 'claude-3-5-haiku-latest', max_tokens: 1024, system: 'Be kind.', messages: [{ role: 'user', content: 'bonjour' }] });

    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openrouter', apiKey: keys.openrouter });
    const viaOpenRouter = await call('POST', `/agents/${agentId}/chat`, { session: 'r', messages: [{ role: 'user', content: 'hola' }] });
    expect(viaOpenRouter.body.data.text).toBe('openrouter says: hola');
    expect(standIn.received.at(-1)!).toMatchObject({ path: '/openrouter/api/v1/chat/completions', body: { model: 'openai/gpt-4o-mini' } });
    expect((await call('GET', `/agents/${agentId}/providers`)).body.data.map((p: { provider: string }) => p.provider)).toEqual(['openrouter', 'anthropic', 'openai']);
  });

  it('enforces the daily token budget in front of the provider: no call once it is spent', async () => {
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data).toMatchObject({ dailyTokens: 200_000 });
    const set = await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: 0 });
    expect(set.body.data).toMatchObject({ dailyTokens: 0, usedToday: expect.any(Number) });
    const calls = standIn.received.length;
    const refused = await fetch(`${app.urls.api}/agents/${agentId}/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ session: 'budget', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 1009, data: { reason: 'token_budget_exhausted', dailyTokens: 0 } });
    expect(standIn.received.length).toBe(calls); // the provider was never asked

    // A call is admitted when its reservation (its request's bytes and its output cap) fits what is left, and
    // counts what the provider reports (13 tokens a stand-in answer): 5,000 left admits it; 100 left does not.
    const { usedToday } = (await call('GET', `/agents/${agentId}/budget`)).body.data;
    await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: usedToday + 5_000 });
    expect((await call('POST', `/agents/${agentId}/chat`, { session: 'budget', messages: [{ role: 'user', content: 'one' }] })).status).toBe(200);
    expect((await call('GET', `/agents/${agentId}/budget`)).body.data).toMatchObject({ dailyTokens: usedToday + 5_000, usedToday: usedToday + 13 });
    await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: usedToday + 113 });
    const calls2 = standIn.received.length;
    expect((await call('POST', `/agents/${agentId}/chat`, { session: 'budget', messages: [{ role: 'user', content: 'two' }] })).status).toBe(429);
    expect(standIn.received.length).toBe(calls2);
    for (const body of [{ dailyTokens: -1 }, { dailyTokens: 1.5 }, {}]) expect((await call('PUT', `/agents/${agentId}/budget`, body)).status).toBe(400);
    await call('PUT', `/agents/${agentId}/budget`, { dailyTokens: 200_000 });
  });

  it('answers 502 when the provider refuses the key: the message stays in the history, its turn failed with why, and it is not sent again', async () => {
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-wrong-key-000000' });
    const refused = await call('POST', `/agents/${agentId}/chat`, { session: 'bad', messages: [{ role: 'user', content: 'hi' }] });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ code: 1011, data: { reason: 'provider_failed', providerStatus: 401 } });
    const history = (await call('GET', `/agents/${agentId}/chat/history?session=bad`)).body.data;
    expect(history.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(history.turns).toEqual([expect.objectContaining({ status: 'failed', error: expect.stringMatching(/^provider_failed: /), tokens: null, finishedAt: expect.any(String) })]);
    // A failed turn is shown, not continued: the next turn does not send its unanswered message.
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: keys.openai });
    expect((await call('POST', `/agents/${agentId}/chat`, { session: 'bad', messages: [{ role: 'user', content: 'hi again' }] })).status).toBe(200);
    expect(standIn.received.at(-1)!.body.messages).toEqual([{ role: 'user', content: 'hi again' }]);
    expect((await call('GET', `/agents/${agentId}/chat/history?session=bad`)).body.data.turns.map((t: { status: string }) => t.status)).toEqual(['failed', 'completed']);
  });

  it('reads one agent as the list shows it, and removes a provider key (the one set last of those left answers)', async () => {
    const listed = (await call('GET', '/agents')).body.data.find((a: { id: string }) => a.id === agentId);
    expect(await call('GET', `/agents/${agentId}`)).toEqual({ status: 200, body: expect.objectContaining({ code: 0, data: listed }) });
    expect(listed.runtimeInstance).toMatchObject({ id: expect.any(String) });
    await call('PUT', `/agents/${agentId}/providers`, { provider: 'anthropic', apiKey: keys.anthropic });
    expect(await call('DELETE', `/agents/${agentId}/providers/anthropic`)).toMatchObject({ status: 200, body: { data: { provider: 'anthropic', deleted: true } } });
    expect((await call('GET', `/agents/${agentId}/providers`)).body.data.map((p: { provider: string }) => p.provider)).not.toContain('anthropic');
    expect((await call('DELETE', `/agents/${agentId}/providers/anthropic`)).body).toMatchObject({ code: 1004, data: { reason: 'provider_not_found' } });
    expect((await call('DELETE', `/agents/${agentId}/providers/nobody`)).status).toBe(400);
    // Anthropic's key gone, OpenAI's (set before it) answers.
    expect((await call('POST', `/agents/${agentId}/chat`, { session: 'after-delete', messages: [{ role: 'user', content: 'who?' }] })).body.data.text).toBe('openai says: who?');
  });

  it('validates chats and hides the agent from everyone else', async () => {
    for (const body of [{ messages: [] }, { messages: [{ role: 'tool', content: 'x' }] }, { session: '', messages: [{ role: 'user', content: 'x' }] }, { session: 'x'.repeat(101), messages: [{ role: 'user', content: 'x' }] }]) {
      expect((await call('POST', `/agents/${agentId}/chat`, body)).status, JSON.stringify(body)).toBe(400);
    }
    const other = await app.identityToken('someone-else');
    for (const [method, path, body] of [
      ['GET', `/agents/${agentId}/config`],
      ['GET', `/agents/${agentId}/providers`],
      ['PUT', `/agents/${agentId}/providers`, { provider: 'openai', apiKey: 'sk-theirs-1234' }],
      ['POST', `/agents/${agentId}/chat`, { messages: [{ role: 'user', content: 'x' }] }],
      ['GET', `/agents/${agentId}/chat/history`],
      ['GET', `/agents/${agentId}/budget`],
      ['PUT', `/agents/${agentId}/budget`, { dailyTokens: 1 }],
      ['GET', `/agents/${agentId}`],
      ['DELETE', `/agents/${agentId}/providers/openai`],
      ['GET', `/agents/${agentId}/payments`],
      ['GET', `/agents/${agentId}/wallet/policy`],
    ] as const) {
      const answer = await call(method, path, body, other);
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.data.reason).toBe('agent_not_found');
    }
    expect((await call('GET', `/agents/${agentId}/providers`)).body.data.find((p: { provider: string }) => p.provider === 'openai').apiKey).toBe('sk-o…6789');
  });
});
