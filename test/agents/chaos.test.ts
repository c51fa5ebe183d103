// The restart chaos test: `tollgate serve` as a real process (every role, its own data dir and database),
// three bought agents with chat histories, then SIGKILL of the service while a chat is in flight at a slow
// provider, runtimes killed, and a restart on the same data. Every agent must answer a chat again within
// 30 s of the restart, with its sessions' histories exactly as they were (the interrupted turn left its
// user's message, its turn failed, and is not sent to the model again), its instance id kept, and the runtime credentials the service persisted equal to what each
// running runtime holds. Once per runtime provider:
// - local: runtimes are the service's children. One SIGKILLed under the live service is redeployed by its
//   supervisor (the others left alone); the rest die with the killed service (their IPC channel closes), and
//   the restarted service redeploys each on its volume.
// - Fly Machines (the live stand-in, whose machines are this test's processes): machines outlive the
//   service. One is killed for good while the service is down; the restarted service is SIGKILLed in turn
//   as it creates the replacement, leaving a machine that holds a token never persisted. The next start's
//   authenticated probe gets 401 from it and redeploys it; the two machines that kept running answer the
//   probe with the persisted tokens and are left alone.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { loadConfig } from '../../src/config.js';
import { AgentSecrets } from '../../src/modules/agents/agent-secrets.js';
import { openConfiguredDatabase } from '../../src/platform/configured-database.js';
import { reportCounts } from '../fuzz/tenants.js';
import { freePort } from '../wallets/helpers.js';
import { cli } from '../helpers/cli.js';
import { startFlyStandIn, type FlyStandIn, type StandInMachine } from './fly-stand-in.js';
import { startProviderStandIn } from './provider-stand-in.js';
import { pgTemplate, seedDataDir } from '../helpers/database.js';
import { stopOrphanedDevchain } from '../helpers/orphans.js';
import { alive } from '../helpers/processes.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const RECOVERY_MS = 30_000;
/** The slow provider answers this long after a request arrives: the service is killed well before. */
const SLOW_MS = 2_000;
const USER = 'chaos-owner';
const FLY_TOKEN = 'fly-chaos-token';
const keys = { openai: 'sk-openai-chaos-0123456789', anthropic: 'sk-ant-chaos-abcdefghij', openrouter: 'sk-or-chaos-9876543210' };

// Two provider stand-ins: OpenAI answers at once (the histories), Anthropic after SLOW_MS (the chat in flight).
const fast = await startProviderStandIn({ keys });
const slow = await startProviderStandIn({ keys, delayMs: SLOW_MS });
const providerEnv = { AGENT_OPENAI_BASE_URL: fast.env.AGENT_OPENAI_BASE_URL, AGENT_ANTHROPIC_BASE_URL: slow.env.AGENT_ANTHROPIC_BASE_URL, AGENT_OPENROUTER_BASE_URL: fast.env.AGENT_OPENROUTER_BASE_URL };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------
// Processes: the service, and what /proc says about the processes it started.

interface Service {
  child: ChildProcess;
  pid: number;
  api: string;
  /** 'SIGKILL' or the exit code. */
  exited: Promise<string | number | null>;
  /** The tail of its stdout and stderr (for a failing assertion's message). */
  output: () => string;
}

interface Data {
  dataDir: string;
  /** A fresh database on the PostgreSQL server of DATABASE_URL, '' on PGlite (in the data dir). */
  databaseUrl: string;
  /** The api origin keeps its port across the restart. */
  apiPort: number;
}

const services: Service[] = [];
const dirs: string[] = [];
const databases: string[] = [];
/** Runtime processes seen under our services: any left alive is killed in afterAll. */
const runtimePidsSeen = new Set<number>();

afterAll(async () => {
  for (const service of services) if (alive(service.pid)) process.kill(service.pid, 'SIGKILL');
  for (const pid of runtimePidsSeen) if (alive(pid)) process.kill(pid, 'SIGKILL');
  // A devchain orphaned by a kill the test did not get to follow with a restart (a failed run).
  for (const dir of dirs) await stopOrphanedDevchain(dir);
  await Promise.all([fast.close(), slow.close()]);
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  for (const name of databases) await adminQuery(`drop database if exists ${name} with (force)`);
}, 60_000);

async function adminQuery(statement: string) {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A data dir, and a database of its own when DATABASE_URL names a server (as test/crash/harness.ts). */
async function freshData(): Promise<Data> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-chaos-'));
  dirs.push(dataDir);
  const apiPort = await freePort();
  if (!process.env.DATABASE_URL) {
    seedDataDir(dataDir);
    return { dataDir, databaseUrl: '', apiPort };
  }
  const name = `tollgate_chaos_${Math.random().toString(36).slice(2, 10)}`;
  // A copy of the run's migrated template: the instance's own migrations then find nothing to do.
  const template = pgTemplate();
  await adminQuery(`create database ${name}${template ? ` template ${template}` : ''}`);
  databases.push(name);
  const url = new URL(process.env.DATABASE_URL);
  url.pathname = `/${name}`;
  return { dataDir, databaseUrl: url.toString(), apiPort };
}

/** `tollgate serve` with every role on the data; `ready` answers its api origin once it prints its origins. */
function start(data: Data, env: Record<string, string>): Service & { ready: Promise<string> } {
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: {
      ...process.env,
      TOLLGATE_DATA_DIR: data.dataDir,
      DATABASE_URL: data.databaseUrl,
      API_PORT: String(data.apiPort),
      FACILITATOR_PORT: '0',
      RELAY_PORT: '0',
      ASSETS_PORT: '0',
      DEVCHAIN_PORT: '0',
      LOG_LEVEL: 'warn',
      // A killed node's turns are failed after 4 s of silence, not the default 20 (what is proven is the same).
      AGENT_TURN_STALE_SECONDS: '4',
      ...providerEnv,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const record = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', record);
  child.stderr!.on('data', record);
  const exited = new Promise<string | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  // Its banner (`api http://…`, then `roles …`) is on stderr, apart from the JSON log on stdout.
  let banner = '';
  const ready = new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      banner += chunk.toString();
      const api = /^roles/m.test(banner) && /^api\s+(\S+)$/m.exec(banner)?.[1];
      if (api) resolve(api);
    });
    void exited.then((code) => reject(new Error(`serve exited (${code}) before it was ready:\n${output}`)));
  });
  ready.catch(() => {}); // a service killed before it was ready: whoever awaits `ready` sees it
  // The log's tail without the lines of refused requests (the 503s a poll collects).
  const tail = () =>
    output
      .split('\n')
      .filter((line) => !line.includes('"msg":"request failed"'))
      .join('\n')
      .slice(-4_000);
  const service = { child, pid: child.pid!, api: '', exited, ready, output: tail };
  services.push(service);
  return service;
}

async function serve(data: Data, env: Record<string, string>): Promise<Service> {
  const service = start(data, env);
  service.api = await service.ready;
  return service;
}

async function kill9(service: Service): Promise<void> {
  process.kill(service.pid, 'SIGKILL');
  expect(await service.exited).toBe('SIGKILL');
}

/** SIGTERM: drains and stops (its local runtimes with it), exit 0. */
async function stopGracefully(service: Service): Promise<void> {
  process.kill(service.pid, 'SIGTERM');
  expect(await service.exited, service.output()).toBe(0);
}

function readFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

const readProc = (pid: number | string, file: string) => readFile(`/proc/${pid}/${file}`);

interface Held {
  pid: number;
  /** The bearer token the runtime was started with: what it holds. */
  token: string;
}

/** The live agent runtimes the service started (its children with an AGENT_ID), by agent, as the OS sees them. */
function runtimesOf(service: Service): Map<string, Held> {
  const found = new Map<string, Held>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProc(entry, 'stat');
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) !== service.pid || state === 'Z') continue;
    const env = Object.fromEntries(
      readProc(entry, 'environ')
        .split('\0')
        .filter(Boolean)
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    if (!env.AGENT_ID) continue;
    expect(found.has(env.AGENT_ID), `two runtimes of agent ${env.AGENT_ID}`).toBe(false);
    found.set(env.AGENT_ID, { pid: Number(entry), token: env.AGENT_RUNTIME_TOKEN! });
    runtimePidsSeen.add(Number(entry));
  }
  return found;
}

async function eventually<T>(check: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs: number, every = 100): Promise<T | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) return null;
    await sleep(every);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The API, as the agents' owner calls it.

interface Agent {
  id: string;
  name: string;
  /** The runtime instance as the API showed it before the crash. */
  instance: { id: string; appName: string; startedAt: string; expiresAt: string };
}

interface Message {
  role: string;
  content: string;
}

class Owner {
  token = '';
  constructor(public api: string) {}

  async call(method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${this.api}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  }

  chat(agentId: string, session: string, content: string) {
    return this.call('POST', `/agents/${agentId}/chat`, { session, messages: [{ role: 'user', content }] });
  }

  /**
   * A session's messages by how their turn ended: `answered` those of completed turns, `unanswered` the user's
   * messages of turns that did not complete (interrupted by the crash; refused while a runtime was restarting).
   */
  async history(agentId: string, session: string): Promise<{ answered: Message[]; unanswered: Message[] }> {
    const answer = await this.call('GET', `/agents/${agentId}/chat/history?session=${session}`);
    expect(answer.status).toBe(200);
    const completed = new Set(answer.body.data.turns.filter((t: { status: string }) => t.status === 'completed').map((t: { id: string }) => t.id));
    const messages = (answer.body.data.raw as Array<Message & { turnId: string }>).filter((e) => e.role !== 'tool');
    const shown = (entries: typeof messages) => entries.map(({ role, content }) => ({ role, content }));
    return { answered: shown(messages.filter((e) => completed.has(e.turnId))), unanswered: shown(messages.filter((e) => !completed.has(e.turnId))) };
  }

  async agents(): Promise<any[]> {
    const answer = await this.call('GET', '/agents');
    expect(answer.status).toBe(200);
    return answer.body.data;
  }
}

/**
 * What each session of each agent holds: its turns in order, each the user's message and the reply (a turn the
 * crash interrupted keeps its message, stored before the model was called, and has no reply).
 */
class Histories {
  readonly #sessions = new Map<string, Array<{ message: Message; answered: boolean }>>();

  add(agentId: string, session: string, content: string, reply: string): void {
    this.#push(agentId, session, { message: { role: 'user', content }, answered: true }, { message: { role: 'assistant', content: reply }, answered: true });
  }

  /** A turn that never answered: its message is kept (its turn failed) and never sent to the model again. */
  addInterrupted(agentId: string, session: string, content: string): void {
    this.#push(agentId, session, { message: { role: 'user', content }, answered: false });
  }

  #push(agentId: string, session: string, ...entries: Array<{ message: Message; answered: boolean }>): void {
    const key = `${agentId} ${session}`;
    this.#sessions.set(key, [...(this.#sessions.get(key) ?? []), ...entries]);
  }

  /** The session as the model is sent it: the turns that answered. */
  sent(agentId: string, session: string): Message[] {
    return (this.#sessions.get(`${agentId} ${session}`) ?? []).filter((entry) => entry.answered).map((entry) => entry.message);
  }

  sessions(agentId: string): string[] {
    return [...this.#sessions.keys()].filter((key) => key.startsWith(`${agentId} `)).map((key) => key.slice(agentId.length + 1));
  }

  /**
   * Every session as the service answers it now: the turns that answered exactly as they were, and each
   * interrupted turn's message still there (a chat refused while a runtime restarts leaves one too).
   */
  async expectKept(owner: Owner, agents: Agent[]): Promise<void> {
    for (const agent of agents) {
      for (const session of this.sessions(agent.id)) {
        const history = await owner.history(agent.id, session);
        expect(history.answered, `${agent.name} ${session}`).toEqual(this.sent(agent.id, session));
        const interrupted = (this.#sessions.get(`${agent.id} ${session}`) ?? []).filter((entry) => !entry.answered).map((entry) => entry.message);
        for (const message of interrupted) expect(history.unanswered, `${agent.name} ${session}`).toContainEqual(message);
      }
    }
  }
}

/**
 * Credits (the operator's CLI through the admin socket), an identity token from the embedded dev issuer, three
 * agents bought and running, each with an OpenAI key and two sessions of two turns.
 */
async function setUp(service: Service, data: Data, histories: Histories): Promise<{ owner: Owner; agents: Agent[] }> {
  const granted = await cli({ TOLLGATE_DATA_DIR: data.dataDir }, 'credits', 'grant', '--sub', USER, '--cents', '3000');
  expect(granted.stdout, granted.stderr).toContain(`granted 3000 cents to ${USER}`);
  const owner = new Owner(service.api);
  owner.token = ((await callAdminSocket(data.dataDir, 'dev.token', { sub: USER })) as { token: string }).token;

  const ids: string[] = [];
  for (const name of ['alpha', 'bravo', 'charlie']) {
    const bought = await owner.call('POST', '/agents', { name, type: 'runtime_a' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(201);
    ids.push(bought.body.data.agent.id);
  }
  const running = await eventually(async () => {
    const listed = await owner.agents();
    return listed.length === 3 && listed.every((a) => a.status === 'running') ? listed : null;
  }, 45_000, 250);
  expect(running, `agents not running:\n${JSON.stringify(await owner.agents())}\n${service.output()}`).not.toBeNull();
  const agents: Agent[] = ids.map((id) => {
    const { name, runtimeInstance } = running!.find((a) => a.id === id);
    return { id, name, instance: { id: runtimeInstance.id, appName: runtimeInstance.appName, startedAt: runtimeInstance.startedAt, expiresAt: runtimeInstance.expiresAt } };
  });

  for (const agent of agents) expect((await owner.call('PUT', `/agents/${agent.id}/providers`, { provider: 'openai', apiKey: keys.openai })).status).toBe(200);
  await Promise.all(
    agents.flatMap((agent) =>
      ['s1', 's2'].map(async (session) => {
        for (const turn of [1, 2]) await chatOk(owner, histories, agent, session, `${agent.name}/${session}/turn ${turn}`, 'openai');
      }),
    ),
  );
  await histories.expectKept(owner, agents);
  return { owner, agents };
}

/** A turn that must answer 200 with the provider's reply; recorded as the session's next turn. */
async function chatOk(owner: Owner, histories: Histories, agent: Agent, session: string, content: string, provider: 'openai' | 'anthropic') {
  const answer = await owner.chat(agent.id, session, content);
  const reply = `${provider} says: ${content}`;
  expect(answer, `${agent.name} ${session}`).toMatchObject({ status: 200, body: { data: { message: { role: 'assistant', content: reply } } } });
  histories.add(agent.id, session, content, reply);
}

/**
 * Switches the agent to the slow provider, starts a turn in its session s1 and SIGKILLs the service once the
 * provider has the request (the turn in flight). The provider had not answered when the service died, so
 * the turn cannot have completed: the history shows the user's message (stored before the model was called)
 * and no reply, and the turn ends `failed`.
 */
async function killMidChat(service: Service, owner: Owner, histories: Histories, agent: Agent): Promise<void> {
  expect((await owner.call('PUT', `/agents/${agent.id}/providers`, { provider: 'anthropic', apiKey: keys.anthropic })).status).toBe(200);
  const content = `${agent.name}/s1/interrupted`;
  const from = slow.received.length;
  const inFlight = owner.chat(agent.id, 's1', content).then(
    (answer) => answer.status,
    () => 'connection lost',
  );
  const seen = await eventually(() => {
    const request = slow.received.slice(from).find((r) => r.body.messages.at(-1)?.content === content);
    return request && { request, at: Date.now() };
  }, 10_000, 5);
  expect(seen, 'the slow provider never got the turn').not.toBeNull();
  await kill9(service);
  const killedAfterMs = Date.now() - seen!.at;
  expect(killedAfterMs).toBeLessThan(SLOW_MS);
  expect(await inFlight).toBe('connection lost');
  // The turn really was under way: the provider got the whole session so far, then the new message.
  expect(seen!.request.body.messages).toEqual([...histories.sent(agent.id, 's1'), { role: 'user', content }]);
  histories.addInterrupted(agent.id, 's1', content);
}

/**
 * Polls a chat on every agent (session `after-restart`) until each answers 200; returns the milliseconds from
 * `since` (the restart's spawn) until each did. A chat that fails adds nothing to its session.
 */
async function untilEveryAgentAnswers(owner: Owner, histories: Histories, agents: Agent[], since: number, service: Service) {
  const answeredAt = new Map<string, number>();
  const last = new Map<string, unknown>();
  await Promise.all(
    agents.map(async (agent) => {
      const content = `${agent.name} is back`;
      while (Date.now() - since < RECOVERY_MS) {
        const answer = await owner.chat(agent.id, 'after-restart', content).catch((error: Error) => ({ status: 0, body: error.message }));
        if (answer.status === 200) {
          answeredAt.set(agent.id, Date.now() - since);
          expect(answer.body.data.text).toMatch(new RegExp(`^(openai|anthropic) says: ${content}$`));
          histories.add(agent.id, 'after-restart', content, answer.body.data.text);
          return;
        }
        last.set(agent.id, answer);
        await sleep(200);
      }
    }),
  );
  const silent = agents.filter((a) => !answeredAt.has(a.id)).map((a) => ({ agent: a.name, lastAnswer: last.get(a.id) }));
  expect(silent, `not answering ${RECOVERY_MS / 1000} s after the restart:\n${service.output()}`).toEqual([]);
  return Math.max(...answeredAt.values());
}

/** Status, instance id, start and expiry as before the crash; every session's history as it was. */
async function expectAgentsKept(owner: Owner, histories: Histories, agents: Agent[]): Promise<void> {
  const listed = await owner.agents();
  for (const agent of agents) {
    const now = listed.find((a) => a.id === agent.id);
    expect(now, agent.name).toMatchObject({ status: 'running', runtimeInstance: agent.instance });
  }
  await histories.expectKept(owner, agents);
}

/**
 * The interrupted session goes on: its turn is failed (its node's heartbeat went stale), and the provider gets
 * the turns that answered before the crash, nothing of the interrupted one.
 */
async function continueInterrupted(owner: Owner, histories: Histories, agent: Agent): Promise<void> {
  const statuses = async () => ((await owner.call('GET', `/agents/${agent.id}/chat/history?session=s1`)).body.data.turns as Array<{ status: string }>).map((t) => t.status);
  expect(await eventually(async () => ((await statuses()).at(-1) === 'failed' ? true : null), 40_000, 500), JSON.stringify(await statuses())).toBe(true);
  expect(await statuses()).toEqual(['completed', 'completed', 'failed']);
  const before = histories.sent(agent.id, 's1');
  const content = `${agent.name}/s1/after the crash`;
  const from = slow.received.length;
  await chatOk(owner, histories, agent, 's1', content, 'anthropic');
  const sent = slow.received.slice(from).filter((r) => r.body.messages.at(-1)?.content === content);
  expect(sent.map((r) => r.body.messages)).toEqual([[...before, { role: 'user', content }]]);
}

/**
 * After the service stopped, the database it persisted (PGlite in the data dir, or its PostgreSQL database):
 * each instance's machine ref and sealed token are those of the runtime that was running.
 */
async function expectPersisted(data: Data, agents: Agent[], held: Map<string, { machineRef: string; token: string }>): Promise<void> {
  const config = loadConfig({ TOLLGATE_DATA_DIR: data.dataDir, LOG_LEVEL: 'silent', ALLOW_DEV_KEYS: '1', ...(data.databaseUrl ? { DATABASE_URL: data.databaseUrl } : {}) });
  const database = await openConfiguredDatabase(config);
  try {
    const rows = await database.query<{ id: string; agent_id: string; machine_ref: string; sealed_token: string }>(sql`select id, agent_id, machine_ref, sealed_token from agent_instances`);
    const secrets = new AgentSecrets(config);
    const persisted = Object.fromEntries(rows.map((row) => [row.agent_id, { id: row.id, machineRef: row.machine_ref, token: secrets.open(row.id, row.sealed_token) }]));
    expect(persisted).toEqual(Object.fromEntries(agents.map((agent) => [agent.id, { id: agent.instance.id, ...held.get(agent.id)! }])));
  } finally {
    await database.close();
  }
}

/**
 * The one-line summary: into CI's summary (TOLLGATE_SUITE_REPORTS), and to stdout itself (the suite's
 * `silent: 'passed-only'` drops console.log of a test that passes).
 */
const summary = (provider: string, agents: number, kills: string[], readyMs: number, answeredMs: number, extra = '') => {
  reportCounts(`agents restart chaos, ${provider}`, { agents, kills: kills.length, 'seconds until every agent answered': Number((answeredMs / 1000).toFixed(1)) });
  process.stdout.write(
    `chaos ${provider} (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}): ${agents} agents, kills: ${kills.join(', ')}; ` +
      `restart ready in ${(readyMs / 1000).toFixed(1)} s, every agent answered ${(answeredMs / 1000).toFixed(1)} s after the restart${extra}\n`,
  );
};

// ---------------------------------------------------------------------------------------------------------

describe('restart chaos, local runtimes', () => {
  it('SIGKILLs a runtime (redeployed by the live supervisor) and the service mid-chat (its runtimes die with it); restarted, every agent answers within 30 s with its histories', async () => {
    const data = await freshData();
    const histories = new Histories();
    const first = await serve(data, {});
    const { owner, agents } = await setUp(first, data, histories);
    const [alpha, bravo, charlie] = agents as [Agent, Agent, Agent];
    const volumeIds = Object.fromEntries(agents.map((a) => [a.id, JSON.parse(fs.readFileSync(path.join(data.dataDir, 'agents', a.instance.appName, 'config.json'), 'utf8')).id]));

    // One runtime per agent, the service's children.
    const started = runtimesOf(first);
    expect([...started.keys()].sort()).toEqual(agents.map((a) => a.id).sort());

    // A runtime is SIGKILLed: chats to it fail until the supervisor's sweep (every 10 s) starts it again on its
    // volume, with a new token the service persists (else every chat would be refused with 401 → 503).
    const killed = started.get(alpha.id)!;
    process.kill(killed.pid, 'SIGKILL');
    expect(await eventually(() => !alive(killed.pid), 5_000, 5)).toBe(true);
    expect(await owner.chat(alpha.id, 'between', 'anyone there?')).toMatchObject({ status: 503, body: { data: { reason: 'runtime_unavailable' } } });
    const killedAt = Date.now();
    const back = await eventually(async () => (await owner.chat(alpha.id, 'between', 'back?')).status === 200, 20_000, 250);
    expect(back, `the live supervisor did not redeploy the killed runtime:\n${first.output()}`).toBe(true);
    const redeployedInMs = Date.now() - killedAt;
    histories.add(alpha.id, 'between', 'back?', 'openai says: back?');
    const beforeCrash = runtimesOf(first);
    expect(beforeCrash.get(alpha.id)!.pid).not.toBe(killed.pid);
    expect(beforeCrash.get(alpha.id)!.token).not.toBe(killed.token);
    expect([...beforeCrash.keys()].sort()).toEqual(agents.map((a) => a.id).sort());
    // The others answered the sweep's probe with the tokens the service holds: left alone.
    for (const agent of [bravo, charlie]) expect(beforeCrash.get(agent.id), agent.name).toEqual(started.get(agent.id));
    await expectAgentsKept(owner, histories, agents);

    // The service is SIGKILLed while bravo's turn waits on the slow provider; its runtimes exit with it.
    await killMidChat(first, owner, histories, bravo);
    const orphans = await eventually(() => [...beforeCrash.values()].every((r) => !alive(r.pid)), 5_000);
    expect(orphans, `runtimes of the killed service still alive: ${[...beforeCrash.values()].filter((r) => alive(r.pid)).map((r) => r.pid)}`).toBe(true);

    // Restart on the same data dir and database.
    const restartedAt = Date.now();
    const second = await serve(data, {});
    const readyMs = Date.now() - restartedAt;
    owner.api = second.api;
    const answeredMs = await untilEveryAgentAnswers(owner, histories, agents, restartedAt, second);
    await expectAgentsKept(owner, histories, agents);
    await continueInterrupted(owner, histories, bravo);
    // Each agent has one new runtime under the new service, on its old volume.
    const after = runtimesOf(second);
    expect([...after.keys()].sort()).toEqual(agents.map((a) => a.id).sort());
    for (const agent of agents) {
      expect([...beforeCrash.values()].map((r) => r.pid)).not.toContain(after.get(agent.id)!.pid);
      expect(JSON.parse(fs.readFileSync(path.join(data.dataDir, 'agents', agent.instance.appName, 'config.json'), 'utf8'))).toMatchObject({ id: volumeIds[agent.id], instanceId: agent.instance.id });
    }

    await stopGracefully(second);
    expect([...after.values()].filter((r) => alive(r.pid))).toEqual([]);
    await expectPersisted(data, agents, new Map([...after].map(([id, r]) => [id, { machineRef: String(r.pid), token: r.token }])));
    summary('local', agents.length, ['runtime (SIGKILL)', 'service mid-chat (SIGKILL)'], readyMs, answeredMs, `; the live supervisor redeployed the killed runtime in ${(redeployedInMs / 1000).toFixed(1)} s`);
  }, 150_000);
});

describe('restart chaos, Fly Machines', () => {
  let fly: FlyStandIn | undefined;
  afterAll(async () => {
    await fly?.close();
  });

  it('SIGKILLs the service mid-chat, a machine for good, and the restarted service mid-redeploy; restarted again, only that machine is redeployed (its orphan refuses the persisted token) and every agent answers within 30 s with its histories', async () => {
    fly = await startFlyStandIn(FLY_TOKEN);
    const flyEnv = {
      AGENT_RUNTIME_PROVIDER: 'fly',
      FLY_API_URL: fly.url,
      FLY_API_TOKEN: FLY_TOKEN,
      FLY_ORG_SLUG: 'tollgate',
      FLY_REGION: 'ams',
      AGENT_RUNTIME_IMAGE: 'registry.fly.io/tollgate-agent:1',
      FLY_APP_URL: `${fly.url}/apps/{app}`,
    };
    const data = await freshData();
    const histories = new Histories();
    const first = await serve(data, flyEnv);
    const { owner, agents } = await setUp(first, data, histories);
    const [alpha, bravo, charlie] = agents as [Agent, Agent, Agent];
    const machineOf = (agent: Agent) => fly!.machineOf(agent.instance.appName)!;
    const machines = new Map(agents.map((a) => [a.id, machineOf(a)]));
    const pids = new Map(agents.map((a) => [a.id, machines.get(a.id)!.pid]));
    const tokens = new Map(agents.map((a) => [a.id, machines.get(a.id)!.config.env.AGENT_RUNTIME_TOKEN]));
    const volumeFile = (agent: Agent) => JSON.parse(fs.readFileSync(path.join(fly!.volumeDir(machineOf(agent).config.mounts[0]!.volume), 'config.json'), 'utf8')) as { id: string; instanceId: string };
    const volumeIds = new Map(agents.map((a) => [a.id, volumeFile(a).id]));
    for (const machine of machines.values()) expect([machine.state, machine.restarts]).toEqual(['started', 0]);
    const alphaApp = alpha.instance.appName;
    const alphaUrl = `${fly.url}/apps/${alphaApp}`;

    // The service dies mid-chat; the machines are not its processes and keep running.
    await killMidChat(first, owner, histories, bravo);
    for (const agent of agents) expect([machineOf(agent), machineOf(agent).state, machineOf(agent).pid]).toEqual([machines.get(agent.id), 'started', pids.get(agent.id)]);
    // While it is down, alpha's machine dies for good (its host failed): only a redeploy brings alpha back.
    await fly.killMachineProcess(alphaApp, { restart: false });
    expect(machines.get(alpha.id)!.state).toBe('stopped');

    // The restarted service's first sweep redeploys alpha, and is SIGKILLed as it creates the new machine:
    // before the machine started, so before its token could be persisted. The machine boots anyway, holding
    // a token the database does not have.
    const callsBefore = fly.calls.length;
    const second = start(data, flyEnv);
    const creating = `POST /v1/apps/${alphaApp}/machines`;
    const created = await eventually(() => fly!.calls.slice(callsBefore).includes(creating), 30_000, 2);
    expect(created, `no redeploy of alpha:\n${second.output()}`).toBe(true);
    const orphan = machineOf(alpha);
    const orphanStateAtKill = orphan.state;
    await kill9(second);
    expect(orphan.id).not.toBe(machines.get(alpha.id)!.id);
    expect(orphanStateAtKill).not.toBe('started');
    expect(await fly.waitForState(orphan, 'started')).toBe(true);
    // It answers (an unauthenticated health check would call it fine), but refuses the token the service holds.
    expect(await (await fetch(`${alphaUrl}/health`)).json()).toMatchObject({ ok: true, agentId: alpha.id, instanceId: alpha.instance.id });
    expect((await fetch(`${alphaUrl}/probe`, { headers: { authorization: `Bearer ${tokens.get(alpha.id)}` } })).status).toBe(401);

    const restartedAt = Date.now();
    const callsAtRestart = fly.calls.length;
    const third = await serve(data, flyEnv);
    const readyMs = Date.now() - restartedAt;
    owner.api = third.api;
    const answeredMs = await untilEveryAgentAnswers(owner, histories, agents, restartedAt, third);
    await expectAgentsKept(owner, histories, agents);
    await continueInterrupted(owner, histories, bravo);

    // alpha: the orphan refused the probe (401), so a third machine on the same volume, with a new token.
    const replaced = machineOf(alpha);
    expect(new Set([machines.get(alpha.id)!.id, orphan.id, replaced.id]).size).toBe(3);
    expect([machines.get(alpha.id)!.state, orphan.state, replaced.state]).toEqual(['destroyed', 'destroyed', 'started']);
    expect(replaced.config.mounts).toEqual(machines.get(alpha.id)!.config.mounts);
    expect(new Set([tokens.get(alpha.id), orphan.config.env.AGENT_RUNTIME_TOKEN, replaced.config.env.AGENT_RUNTIME_TOKEN]).size).toBe(3);
    // bravo and charlie kept running through both crashes: each restarted service's probe, with the tokens
    // persisted, found them answering, so they were left alone (same machine, process and token).
    for (const agent of [bravo, charlie]) {
      const machine = machineOf(agent);
      expect({ agent: agent.name, machine: machine.id, pid: machine.pid, restarts: machine.restarts, token: machine.config.env.AGENT_RUNTIME_TOKEN }).toEqual({
        agent: agent.name,
        machine: machines.get(agent.id)!.id,
        pid: pids.get(agent.id),
        restarts: 0,
        token: tokens.get(agent.id),
      });
    }
    const machineCalls = (from: number) => fly!.calls.slice(from).filter((call) => /^(POST|DELETE) \/v1\/apps\/[^/]+\/machines/.test(call));
    expect(machineCalls(callsBefore)).toEqual([
      `DELETE /v1/apps/${alphaApp}/machines/${machines.get(alpha.id)!.id}`,
      creating,
      `DELETE /v1/apps/${alphaApp}/machines/${orphan.id}`,
      creating,
    ]);
    expect(machineCalls(callsAtRestart)).toHaveLength(2);
    for (const agent of agents) expect(volumeFile(agent)).toEqual(expect.objectContaining({ id: volumeIds.get(agent.id), instanceId: agent.instance.id }));

    await stopGracefully(third);
    const live = (machine: StandInMachine) => ({ machineRef: machine.id, token: machine.config.env.AGENT_RUNTIME_TOKEN! });
    await expectPersisted(data, agents, new Map(agents.map((a) => [a.id, live(machineOf(a))])));
    summary('fly', agents.length, ['service mid-chat (SIGKILL)', 'machine without restart (SIGKILL)', 'service mid-redeploy (SIGKILL)'], readyMs, answeredMs);
  }, 150_000);
});
