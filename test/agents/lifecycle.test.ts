// An agent's life as its user drives it, end to end on the local provider: configuration (models and bot
// settings) reaching the provider, sessions listed and deleted, stop (runtime halted, no charge back) and start
// on the same volume with histories intact, renewal charged atomically (402 when short, nothing changed),
// expiry with the volume kept a week (export until then, 410 after), and delete (gone from lists, volume and
// histories removed). Another user's agent is 404 on every route.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { AgentSecrets } from '../../src/modules/agents/agent-secrets.js';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startProviderStandIn } from './provider-stand-in.js';

const keys = { openai: 'sk-openai-life-0123456789', anthropic: 'sk-ant-life-abcdefghij', openrouter: 'sk-or-life-9876543210' };
const standIn = await startProviderStandIn({ keys });
const clock = new ManualClock();
let app: TestApp;
let token: string;

async function call(method: string, path: string, body?: unknown, as = token) {
  const response = await fetch(`${app.urls.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${as}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}
const loop = (name: string) => app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === name)!.run(new AbortController().signal);
const instanceRow = async (agentId: string) =>
  (await app.ctx.database.query<{ url: string; volume_ref: string; halted_at: Date | null }>(sql`select url, volume_ref, halted_at from agent_instances where agent_id = ${agentId}`))[0]!;
const answers = async (url: string) => (await fetch(`${url}/health`).catch(() => null))?.ok === true;
const chat = (agentId: string, content: string, session = 'main') => call('POST', `/agents/${agentId}/chat`, { session, messages: [{ role: 'user', content }] });
const agentOf = async (agentId: string) => (await call('GET', '/agents')).body.data.find((a: { id: string }) => a.id === agentId);

async function deployedAgent(name: string) {
  const id = (await call('POST', '/agents', { name, type: 'runtime_a' })).body.data.agent.id as string;
  await loop('agents.deploy');
  expect((await agentOf(id)).status).toBe('running');
  await call('PUT', `/agents/${id}/providers`, { provider: 'openai', apiKey: keys.openai });
  return id;
}

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'], clock, env: standIn.env });
  await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 4000, note: 'test' });
  token = await app.identityToken('owner');
});
afterAll(async () => {
  await app?.close();
  await standIn.close();
});

describe('agent configuration and sessions', () => {
  it('sends the configured model, system prompt, temperature and output cap; validates them', async () => {
    const id = await deployedAgent('configured');
    const set = await call('PUT', `/agents/${id}/config`, { models: { openai: 'gpt-4.1-mini' }, botSettings: { systemPrompt: 'You are terse.', temperature: 0.2, maxOutputTokens: 200 } });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ id, models: { openai: 'gpt-4.1-mini' }, botSettings: { systemPrompt: 'You are terse.', temperature: 0.2, maxOutputTokens: 200 } });
    expect((await call('GET', `/agents/${id}/config`)).body.data).toEqual(set.body.data);
    expect((await chat(id, 'hello')).status).toBe(200);
    expect(standIn.received.at(-1)!.body).toMatchObject({ model: 'gpt-4.1-mini', temperature: 0.2, max_tokens: 200, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'hello' }] });
    // The system prompt goes before every turn but is not part of the session.
    expect((await call('GET', `/agents/${id}/chat/history`)).body.data.messages[0]).toEqual({ role: 'user', content: 'hello' });
    for (const body of [{}, { botSettings: { temperature: 3 } }, { botSettings: { maxOutputTokens: 0 } }, { botSettings: { mood: 'x' } }, { models: { mistral: 'x' } }, { models: { openai: 'bad name!' } }]) {
      expect((await call('PUT', `/agents/${id}/config`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await call('PUT', `/agents/${id}/config`, { models: null, botSettings: null })).body.data).toMatchObject({ models: null, botSettings: null });
    await chat(id, 'defaults');
    expect(standIn.received.at(-1)!.body).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 1024 });
    expect(standIn.received.at(-1)!.body.temperature).toBeUndefined();
  });

  it('lists sessions by last use, deletes one with its transcript, and counts the usage', async () => {
    const id = await deployedAgent('sessions');
    await chat(id, 'first', 'alpha');
    clock.advance(1_000);
    await chat(id, 'second', 'beta');
    await chat(id, 'third', 'beta');
    const sessions = (await call('GET', `/agents/${id}/chat/sessions`)).body.data;
    expect(sessions).toEqual([
      { session: 'beta', messages: 4, updatedAt: clock.now().toISOString() },
      { session: 'alpha', messages: 2, updatedAt: new Date(clock.now().getTime() - 1_000).toISOString() },
    ]);
    expect((await call('DELETE', `/agents/${id}/chat/sessions/beta`)).body.data).toEqual({ session: 'beta', deleted: true });
    expect((await call('DELETE', `/agents/${id}/chat/sessions/beta`)).body.data.reason).toBe('session_not_found');
    expect((await call('GET', `/agents/${id}/chat/history?session=beta`)).body.data.messages).toEqual([]);
    expect((await call('GET', `/agents/${id}/chat/sessions`)).body.data.map((s: { session: string }) => s.session)).toEqual(['alpha']);
    const usage = (await call('GET', `/agents/${id}/usage`)).body.data;
    expect(usage).toEqual({ tokens: { today: 39, total: 39, day: clock.now().toISOString().slice(0, 10) }, payments: { count: 0, spent: '0', held: '0' } });
  });
});

describe('the supervisor', () => {
  it('deploys again a runtime that crashed, hangs, or refuses the token the service holds; chat answers after each', async () => {
    // A timeline on stdout, which vitest shows only when the test fails (it once ran past 150 s in a loaded CI).
    const started = Date.now();
    const mark = (step: string) => console.log(`[supervisor t+${((Date.now() - started) / 1000).toFixed(1)}s] ${step}`);
    const id = await deployedAgent('supervised');
    mark('deployed');
    await chat(id, 'before');
    const pidOf = async () => Number((await app.ctx.database.query<{ machine_ref: string }>(sql`select machine_ref from agent_instances where agent_id = ${id}`))[0]!.machine_ref);

    // Crashed: its new token is stored with its new address (before the fix, every chat after this was 503).
    process.kill(await pidOf(), 'SIGKILL');
    mark('killed');
    await loop('agents.runtimes');
    mark('swept after the crash');
    expect((await chat(id, 'after a crash')).status).toBe(200);
    mark('answered after the crash');

    // Holding another token than the service's (a 401 to the probe).
    const secrets = new AgentSecrets(app.ctx.config);
    const [{ instance_id }] = await app.ctx.database.query<{ instance_id: string }>(sql`select id as instance_id from agent_instances where agent_id = ${id}`);
    await app.ctx.database.query(sql`update agent_instances set sealed_token = ${secrets.seal(instance_id!, 'not-its-token')} where agent_id = ${id}`);
    expect((await chat(id, 'refused')).status).toBe(503);
    mark('refused');
    const refusedPid = await pidOf();
    await loop('agents.runtimes');
    mark('swept after the 401');
    expect(await pidOf()).not.toBe(refusedPid);
    expect((await chat(id, 'after a 401')).status).toBe(200);
    mark('answered after the 401');

    // Hung: it accepts connections but never answers the probe.
    const hungPid = await pidOf();
    process.kill(hungPid, 'SIGSTOP');
    mark('stopped (SIGSTOP)');
    await loop('agents.runtimes'); // a first silent probe may be a slow runtime: it is given one more sweep
    mark('first sweep of the hung runtime');
    expect(await pidOf()).toBe(hungPid);
    await loop('agents.runtimes');
    mark('second sweep of the hung runtime');
    expect(await pidOf()).not.toBe(hungPid);
    expect((await chat(id, 'after a hang')).status).toBe(200);
    mark('answered after the hang');
    const history = (await call('GET', `/agents/${id}/chat/history`)).body.data;
    expect(history.messages.filter((m: { role: string }) => m.role === 'user').map((m: { content: string }) => m.content)).toEqual([
      'before',
      'after a crash',
      'refused',
      'after a 401',
      'after a hang',
    ]);
    // The refused turn is kept, failed: its message was stored before the runtime was asked.
    expect(history.turns.map((t: { status: string; error: string | null }) => [t.status, t.error?.split(':')[0] ?? null])).toEqual([
      ['completed', null],
      ['completed', null],
      ['failed', 'runtime_unavailable'],
      ['completed', null],
      ['completed', null],
    ]);
    // Four runtime starts and two 5 s probe timeouts: on a loaded 2-core CI machine this took over 60 s.
  }, 150_000);
});

describe('agent lifecycle', () => {
  let id: string;

  it('stops a running agent (runtime halted, no charge back) and starts it again on its volume with its histories', async () => {
    id = await deployedAgent('lifecycle');
    await chat(id, 'remember me');
    const { url, volume_ref } = await instanceRow(id);
    const volumeId = JSON.parse(fs.readFileSync(path.join(volume_ref, 'config.json'), 'utf8')).id;
    const balance = (await call('GET', '/credits')).body.data.balanceUsdCents;

    const stopped = await call('POST', `/agents/${id}/stop`);
    expect(stopped.body.data).toMatchObject({ id, status: 'stopped', runtimeInstance: { stoppedAt: clock.now().toISOString() } });
    expect(stopped.body.data.runtimeInstance.removeAt).toBe(new Date(new Date(stopped.body.data.runtimeInstance.expiresAt).getTime() + 7 * 24 * 3600_000).toISOString());
    expect((await chat(id, 'are you there')).body.data).toMatchObject({ reason: 'agent_not_running', status: 'stopped' });
    await loop('agents.runtimes'); // this node has no worker role: the sweep halts it
    expect(await answers(url)).toBe(false);
    expect((await instanceRow(id)).halted_at).not.toBeNull();
    expect((await call('POST', `/agents/${id}/stop`)).body.data).toMatchObject({ reason: 'agent_state_conflict', status: 'stopped' });
    expect((await call('GET', '/credits')).body.data.balanceUsdCents).toBe(balance);
    expect((await call('GET', `/agents/${id}/budget`)).status).toBe(200);

    expect((await call('POST', `/agents/${id}/start`)).body.data).toMatchObject({ status: 'pending' });
    await loop('agents.deploy');
    expect((await agentOf(id)).status).toBe('running');
    expect(JSON.parse(fs.readFileSync(path.join((await instanceRow(id)).volume_ref, 'config.json'), 'utf8')).id).toBe(volumeId);
    expect((await chat(id, 'back again')).status).toBe(200);
    expect(standIn.received.at(-1)!.body.messages.map((m: { content: string }) => m.content)).toEqual(['remember me', 'openai says: remember me', 'back again']);
    expect((await call('POST', `/agents/${id}/start`)).body.data.reason).toBe('agent_state_conflict');
  });

  it('never starts an agent on an empty volume when its own is gone: volume_lost, its histories still exportable', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 1000, note: 'a lost one' });
    const lost = await deployedAgent('lost');
    await chat(lost, 'keep this');
    await call('POST', `/agents/${lost}/stop`);
    await loop('agents.runtimes');
    const { volume_ref } = await instanceRow(lost);
    fs.rmSync(volume_ref, { recursive: true, force: true });
    await call('POST', `/agents/${lost}/start`);
    await loop('agents.deploy');
    expect(await agentOf(lost)).toMatchObject({ status: 'volume_lost', lastError: expect.stringContaining('gone') });
    expect(fs.existsSync(volume_ref)).toBe(false);
    expect((await call('GET', `/agents/${lost}/export`)).body.data.sessions[0].entries.map((e: { content: string }) => e.content)).toEqual(['keep this', 'openai says: keep this']);
    expect((await call('POST', `/agents/${lost}/start`)).body.data.reason).toBe('agent_state_conflict');
  });

  it('renews for 1000 credit cents atomically, and refuses with 402 when short, changing nothing', async () => {
    const before = await agentOf(id);
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 1500, note: 'renewal' });
    const balance = (await call('GET', '/credits')).body.data.balanceUsdCents;
    expect(balance).toBe(1500);
    const renewed = await call('POST', `/agents/${id}/renew`);
    expect(renewed.status).toBe(200);
    expect(renewed.body.data.charge).toEqual({ amountUsdCents: 1000, balanceAfterUsdCents: balance - 1000 });
    // A renewal answers as a purchase does: { agent, charge }, the agent as GET /agents/{agentId} shows it.
    expect(Object.keys(renewed.body.data).sort()).toEqual(['agent', 'charge']);
    expect(renewed.body.data.agent).toEqual((await call('GET', `/agents/${id}`)).body.data);
    expect(new Date(renewed.body.data.agent.runtimeInstance.expiresAt).getTime() - new Date(before.runtimeInstance.expiresAt).getTime()).toBe(30 * 24 * 3600_000);
    expect((await call('GET', '/credits/ledger?limit=1')).body.data[0]).toMatchObject({ amountUsdCents: -1000, cause: { kind: 'renewal', id } });

    // What is left is not enough for another month.
    const short = await call('POST', `/agents/${id}/renew`);
    expect(short.status).toBe(402);
    expect(short.body.data).toMatchObject({ reason: 'insufficient_balance', balanceUsdCents: balance - 1000, requiredUsdCents: 1000 });
    expect((await agentOf(id)).runtimeInstance.expiresAt).toBe(renewed.body.data.agent.runtimeInstance.expiresAt);
  });

  it('expires at the end of its months, keeps the volume a week (export until then), and a renewal brings it back', async () => {
    const expiresAt = new Date((await agentOf(id)).runtimeInstance.expiresAt);
    clock.set(expiresAt);
    await loop('agents.runtimes');
    const expired = await agentOf(id);
    expect(expired).toMatchObject({ status: 'expired', runtimeInstance: { removeAt: new Date(expiresAt.getTime() + 7 * 24 * 3600_000).toISOString() } });
    const exported = await call('GET', `/agents/${id}/export`);
    expect(exported.body.data).toMatchObject({ agent: { id, status: 'expired' }, config: { id }, sessions: [{ session: 'main', entries: expect.any(Array) }] });
    expect(exported.body.data.sessions[0].entries.map((e: { content: string }) => e.content)).toEqual(['remember me', 'openai says: remember me', 'back again', 'openai says: back again']);

    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 500, note: 'renewal' });
    expect((await call('POST', `/agents/${id}/renew`)).body.data.agent).toMatchObject({ status: 'pending', runtimeInstance: { expiresAt: new Date(expiresAt.getTime() + 30 * 24 * 3600_000).toISOString() } });
    await loop('agents.deploy');
    expect(await agentOf(id)).toMatchObject({ status: 'running', runtimeInstance: { stoppedAt: null, removeAt: null } });
    expect((await chat(id, 'a new month')).status).toBe(200);
  });

  it('removes the volume and histories a week after expiry: export answers 410 then', async () => {
    const expiresAt = new Date((await agentOf(id)).runtimeInstance.expiresAt);
    clock.set(expiresAt);
    await loop('agents.runtimes');
    const { volume_ref } = await instanceRow(id);
    clock.set(new Date(expiresAt.getTime() + 7 * 24 * 3600_000));
    await loop('agents.runtimes');
    expect(fs.existsSync(volume_ref)).toBe(false);
    expect((await call('GET', `/agents/${id}/export`)).body.data).toMatchObject({ reason: 'agent_data_removed' });
    expect((await call('GET', `/agents/${id}/chat/history`)).body.data.messages).toEqual([]);
    expect((await call('POST', `/agents/${id}/renew`)).body.data.reason).toBe('agent_state_conflict');
  });

  it('deletes an agent: gone from lists, its runtime and volume removed with its histories; 404 after', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 1000, note: 'another agent' });
    const doomed = await deployedAgent('doomed');
    await chat(doomed, 'forget me');
    const { url, volume_ref } = await instanceRow(doomed);
    expect((await call('DELETE', `/agents/${doomed}`)).body.data).toEqual({ deleted: true });
    expect(await agentOf(doomed)).toBeUndefined();
    for (const [method, route] of [['GET', `/agents/${doomed}/config`], ['GET', `/agents/${doomed}/export`], ['DELETE', `/agents/${doomed}`], ['POST', `/agents/${doomed}/start`]] as const) {
      expect((await call(method, route)).status, `${method} ${route}`).toBe(404);
    }
    await loop('agents.runtimes');
    expect(await answers(url)).toBe(false);
    expect(fs.existsSync(volume_ref)).toBe(false);
    const [left] = await app.ctx.database.query<{ n: number }>(sql`select count(*)::int as n from agent_chat_entries where agent_id = ${doomed}`);
    expect(left!.n).toBe(0);
  });

  it("hides each new route of someone else's agent behind 404", async () => {
    const other = await app.identityToken('intruder');
    for (const [method, route, body] of [
      ['POST', `/agents/${id}/stop`],
      ['POST', `/agents/${id}/start`],
      ['POST', `/agents/${id}/renew`],
      ['DELETE', `/agents/${id}`],
      ['GET', `/agents/${id}/export`],
      ['GET', `/agents/${id}/usage`],
      ['GET', `/agents/${id}/chat/sessions`],
      ['DELETE', `/agents/${id}/chat/sessions/main`],
      ['PUT', `/agents/${id}/config`, { botSettings: { temperature: 1 } }],
    ] as const) {
      const answer = await call(method, route, body, other);
      expect(answer.status, `${method} ${route}`).toBe(404);
      expect(answer.body.data.reason).toBe('agent_not_found');
    }
    expect((await agentOf(id)).status).not.toBe('deleted');
  });
});

describe('buying and renewing with an Idempotency-Key', () => {
  const keyed = async (path: string, key: string, body?: unknown) => {
    const response = await fetch(`${app.urls.api}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'idempotency-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, replayed: response.headers.get('idempotent-replayed') === 'true', body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const balance = async () => (await call('GET', '/credits')).body.data.balanceUsdCents as number;

  it('concurrent copies and a retry of one purchase charge once and create one agent, all answering alike; another body under the key is 409', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'owner', cents: 3000, note: 'idempotent purchase' });
    const before = await balance();
    const key = `buy-${Date.now()}`;
    const copies = await Promise.all(Array.from({ length: 4 }, () => keyed('/agents', key, { name: 'bought once', type: 'runtime_a' })));
    const retry = await keyed('/agents', key, { name: 'bought once', type: 'runtime_a' });
    for (const copy of [...copies, retry]) expect([copy.status, copy.body]).toEqual([201, copies[0]!.body]);
    expect([...copies, retry].filter((c) => !c.replayed)).toHaveLength(1);
    expect(await balance()).toBe(before - 1000);
    expect((await call('GET', '/agents')).body.data.filter((a: { name: string }) => a.name === 'bought once')).toHaveLength(1);

    const other = await keyed('/agents', key, { name: 'bought twice', type: 'runtime_a' });
    expect([other.status, other.body.data]).toEqual([409, { reason: 'idempotency_conflict' }]);
    expect(await balance()).toBe(before - 1000);
  });

  it('a retried renewal charges and extends once', async () => {
    const agentId = await deployedAgent('renewed once');
    const before = { balance: await balance(), expiresAt: (await agentOf(agentId)).runtimeInstance.expiresAt };
    const key = `renew-${Date.now()}`;
    const [first, retry] = [await keyed(`/agents/${agentId}/renew`, key), await keyed(`/agents/${agentId}/renew`, key)];
    expect([first.status, retry.status, retry.replayed]).toEqual([200, 200, true]);
    expect(retry.body).toEqual(first.body);
    expect(await balance()).toBe(before.balance - 1000);
    expect(new Date((await agentOf(agentId)).runtimeInstance.expiresAt).getTime() - new Date(before.expiresAt).getTime()).toBe(30 * 24 * 3600_000);
  });
});
