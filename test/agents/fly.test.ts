// Agent runtimes on Fly Machines, through the adapter speaking the Machines REST API to a live stand-in whose
// machines run the real runtime program and whose proxy routes <stand-in>/apps/<app> (FLY_APP_URL) to them:
// the app, its public IPs, volume and machine of a bought agent; the runtime reachable at its url with its
// token, directly and through the agents API, and unreachable once its app has no public IP; a crashed
// process restarted by Fly's policy; a dead machine replaced on the same volume (its data kept, no IP
// allocated twice); expiry stops the machine and removal deletes machine, volume, IPs and app; a vanished
// volume is refused.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/settings.js';
import { AgentSecrets } from '../../src/modules/agents/agent-secrets.js';
import { FlyRuntimeProvider } from '../../src/modules/agents/fly-provider.js';
import { VolumeLostError } from '../../src/modules/agents/runtime-provider.js';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startFlyStandIn, type FlyStandIn } from './fly-stand-in.js';

const FLY_TOKEN = 'fly-test-token';
const clock = new ManualClock();
let fly: FlyStandIn;
let app: TestApp;

beforeAll(async () => {
  fly = await startFlyStandIn(FLY_TOKEN);
  app = await buildTestApp({
    roles: ['api'],
    clock,
    env: {
      AGENT_RUNTIME_PROVIDER: 'fly',
      FLY_API_URL: fly.url,
      FLY_API_TOKEN: FLY_TOKEN,
      FLY_ORG_SLUG: 'tollgate',
      FLY_REGION: 'ams',
      AGENT_RUNTIME_IMAGE: 'registry.fly.io/tollgate-agent:1',
      FLY_APP_URL: `${fly.url}/apps/{app}`,
    },
  });
});
afterAll(async () => {
  await app?.close();
  await fly?.close();
});

const run = (name: string) => app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === name)!.run(new AbortController().signal);

/** A call to the stand-in's Machines API, as an operator with the org's token would make it. */
const flyApi = async (standIn: FlyStandIn, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${standIn.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${FLY_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(response.ok, `${method} ${path} answered ${response.status}`).toBe(true);
  return response.json() as Promise<any>;
};

describe('agent runtimes on Fly Machines', () => {
  it('needs its settings', () => {
    expect(() => loadConfig({ AGENT_RUNTIME_PROVIDER: 'fly' })).toThrow(ConfigError);
    for (const name of ['FLY_API_TOKEN', 'FLY_ORG_SLUG', 'AGENT_RUNTIME_IMAGE']) expect(() => loadConfig({ AGENT_RUNTIME_PROVIDER: 'fly' })).toThrow(name);
    const flyEnv = { AGENT_RUNTIME_PROVIDER: 'fly', FLY_API_TOKEN: 't', FLY_ORG_SLUG: 'o', AGENT_RUNTIME_IMAGE: 'i' };
    expect(loadConfig(flyEnv).agentRuntimes).toMatchObject({ provider: 'fly', appUrl: 'https://{app}.fly.dev' });
    expect(loadConfig({ ...flyEnv, FLY_APP_URL: 'http://127.0.0.1:8080/apps/{app}/' }).agentRuntimes).toMatchObject({ appUrl: 'http://127.0.0.1:8080/apps/{app}' });
    expect(loadConfig({ ...flyEnv, FLY_APP_URL: 'https://{app}.agents.example.com' }).agentRuntimes).toMatchObject({ appUrl: 'https://{app}.agents.example.com' });
    for (const bad of ['https://agents.example.com', 'ftp://{app}.fly.dev', '{app}.fly.dev', 'https://{app}.fly.dev/?x=1', 'https://user:pw@{app}.fly.dev']) {
      expect(() => loadConfig({ ...flyEnv, FLY_APP_URL: bad }), bad).toThrow('FLY_APP_URL');
    }
  });

  it('deploys a reachable runtime, restarts and replaces it on the same volume, stops at expiry, removes everything a week later and refuses a vanished volume', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'flyer', cents: 2000, note: 'test' });
    const token = await app.identityToken('flyer');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await fetch(`${app.urls.api}/agents`, { method: 'POST', headers, body: JSON.stringify({ name: 'on fly', type: 'runtime_b' }) });
    const list = async () => ((await (await fetch(`${app.urls.api}/agents`, { headers })).json()) as { data: any[] }).data[0];
    await run('agents.deploy');

    const agent = await list();
    expect(agent.status).toBe('running');
    const instance = agent.runtimeInstance;
    const appName: string = instance.appName;
    expect(instance).toMatchObject({ cpus: 1, memoryMb: 512, volumeSizeGb: 1 });
    // Where the service reaches it: FLY_APP_URL with the app's name (read from its row: the API may not show a loopback address).
    const [row] = await app.ctx.database.query<{ url: string; sealed_token: string; volume_ref: string }>(sql`select url, sealed_token, volume_ref from agent_instances where id = ${instance.id}`);
    const url = `${fly.url}/apps/${appName}`;
    expect(row!.url).toBe(url);
    expect(fly.apps.get(appName)).toEqual({ org: 'tollgate' });
    // Its public addresses, allocated through the Machines API after listing none: a shared IPv4, a dedicated IPv6.
    const ipCalls = () => fly.calls.filter((call) => call.endsWith(`/v1/apps/${appName}/ip_assignments`));
    expect(ipCalls()).toEqual(['GET', 'POST', 'POST'].map((method) => `${method} /v1/apps/${appName}/ip_assignments`));
    expect(fly.ips.get(appName)!.map((ip) => ip.type).sort()).toEqual(['shared_v4', 'v6']);
    expect([...fly.volumes.values()]).toEqual([expect.objectContaining({ app: appName, size_gb: 1, region: 'ams' })]);
    const first = fly.machineOf(appName)!;
    expect(first.state).toBe('started');
    expect(first.pid).toEqual(expect.any(Number));
    expect(first.config).toMatchObject({
      image: 'registry.fly.io/tollgate-agent:1',
      init: { entrypoint: ['node', '/app/dist/agent-runtime/main.js'] },
      guest: { cpus: 1, memory_mb: 512 },
      mounts: [{ volume: [...fly.volumes.keys()][0], path: '/data' }],
      env: { AGENT_ID: agent.id, AGENT_TYPE: 'runtime_b', INSTANCE_ID: instance.id, AGENT_RUNTIME_DATA_DIR: '/data', AGENT_DAILY_TOKEN_BUDGET: '200000' },
      restart: { policy: 'always' },
    });

    // The runtime answers at its url with its token: the one sealed on the instance row (opened as the
    // service opens it), which is the one in the machine's environment.
    const runtimeToken = new AgentSecrets(app.config).open(instance.id, row!.sealed_token);
    expect(runtimeToken).toMatch(/^[0-9a-f]{64}$/);
    expect(runtimeToken).toBe(first.config.env.AGENT_RUNTIME_TOKEN);
    expect(row!.sealed_token).not.toContain(runtimeToken);
    const direct = await fetch(`${url}/budget`, { headers: { authorization: `Bearer ${runtimeToken}` } });
    expect(direct.status).toBe(200);
    expect(await direct.json()).toMatchObject({ dailyTokens: 200_000, usedToday: 0 });
    expect((await fetch(`${url}/budget`)).status).toBe(401);
    expect(await (await fetch(`${url}/health`)).json()).toMatchObject({ ok: true, agentId: agent.id, instanceId: instance.id });
    // And the agents API reaches it there (a running agent's token day is the runtime's answer).
    const viaService = async () => {
      const response = await fetch(`${app.urls.api}/agents/${agent.id}/budget`, { headers });
      return { status: response.status, body: (await response.json()) as { data: any } };
    };
    const reached = { status: 200, body: expect.objectContaining({ data: expect.objectContaining({ dailyTokens: 200_000, usedToday: 0 }) }) };
    const unavailable = { status: 503, body: expect.objectContaining({ data: { reason: 'runtime_unavailable' } }) };
    expect(await viaService()).toEqual(reached);
    // What the runtime keeps on its volume: a directory of the stand-in's, outliving machines.
    const volumeFile = () => JSON.parse(fs.readFileSync(path.join(fly.volumeDir(row!.volume_ref), 'config.json'), 'utf8')) as { id: string; instanceId: string };
    const runtimeId = volumeFile().id;
    expect(volumeFile().instanceId).toBe(instance.id);

    // The process crashes: the restart policy boots the same machine again, with the same environment.
    const crashedPid = first.pid;
    await fly.killMachineProcess(appName);
    expect(await fly.waitForState(first, 'started')).toBe(true);
    expect(fly.machineOf(appName)).toBe(first);
    expect([first.restarts, first.pid === crashedPid]).toEqual([1, false]);
    expect(await viaService()).toEqual(reached);

    // The machine dies for good (its host failed): down until the sweep replaces it, adopting the same
    // volume, whose data the new machine finds; the app's IPs are there, none is added.
    await fly.killMachineProcess(appName, { restart: false });
    expect(first.state).toBe('stopped');
    expect(await viaService()).toEqual(unavailable);
    await run('agents.runtimes');
    const second = fly.machineOf(appName)!;
    expect([first.state, second.state]).toEqual(['destroyed', 'started']);
    expect(second.config.mounts).toEqual(first.config.mounts);
    expect(second.config.env.AGENT_RUNTIME_TOKEN).not.toBe(runtimeToken);
    expect(fly.volumes.size).toBe(1);
    expect(volumeFile().id).toBe(runtimeId);
    expect(ipCalls()).toEqual(['GET', 'POST', 'POST', 'GET'].map((method) => `${method} /v1/apps/${appName}/ip_assignments`));
    expect((await list()).runtimeInstance).toMatchObject({ id: instance.id, startedAt: instance.startedAt, expiresAt: instance.expiresAt });
    expect(await viaService()).toEqual(reached);

    // Without public IPs the app is unreachable, its machine running or not: released, Fly's proxy has no
    // address for it (the connection fails) and the agents API answers runtime_unavailable.
    for (const { ip } of fly.ips.get(appName)!) await flyApi(fly, 'DELETE', `/v1/apps/${appName}/ip_assignments/${ip}`);
    expect(second.state).toBe('started');
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    expect(await viaService()).toEqual(unavailable);
    // The next deploy allocates them again (what it lists is missing), and the runtime is reachable again.
    await fly.killMachineProcess(appName, { restart: false });
    await run('agents.runtimes');
    expect(ipCalls().slice(4)).toEqual(['GET', 'POST', 'POST'].map((method) => `${method} /v1/apps/${appName}/ip_assignments`));
    expect(fly.ips.get(appName)!.map((ip) => ip.type).sort()).toEqual(['shared_v4', 'v6']);
    const third = fly.machineOf(appName)!;
    expect(third.state).toBe('started');
    expect(await viaService()).toEqual(reached);
    expect(volumeFile().id).toBe(runtimeId);

    // The month ends: the machine stops (its process ends); a week later machine, volume, IPs and app are deleted.
    clock.advance(30 * 24 * 3600_000);
    await run('agents.runtimes');
    expect([third.state, third.pid]).toEqual(['stopped', null]);
    expect((await list()).status).toBe('expired');
    await expect(fetch(`${url}/health`)).resolves.toMatchObject({ status: 503 });
    clock.advance(7 * 24 * 3600_000);
    await run('agents.runtimes');
    expect(third.state).toBe('destroyed');
    expect(fly.volumes.size).toBe(0);
    expect(fly.apps.has(appName)).toBe(false);
    expect(fly.ips.has(appName)).toBe(false);
    expect([...fly.machines.values()].filter((m) => m.pid !== null)).toEqual([]);
    expect((await list()).runtimeInstance.removedAt).toBe(clock.now().toISOString());

    // A volume that vanished is not replaced by an empty one: another agent's machine is destroyed and its
    // volume gone; the sweep starts no machine and makes no volume.
    await fetch(`${app.urls.api}/agents`, { method: 'POST', headers, body: JSON.stringify({ name: 'second on fly', type: 'runtime_a' }) });
    await run('agents.deploy');
    const other = await list();
    expect(other.status).toBe('running');
    const otherApp: string = other.runtimeInstance.appName;
    const otherMachine = fly.machineOf(otherApp)!;
    expect(otherMachine.state).toBe('started');
    await flyApi(fly, 'DELETE', `/v1/apps/${otherApp}/machines/${otherMachine.id}?force=true`);
    expect([otherMachine.state, otherMachine.pid]).toEqual(['destroyed', null]);
    fly.volumes.clear();
    await run('agents.runtimes');
    expect(fly.machineOf(otherApp)).toBeNull();
    expect(fly.volumes.size).toBe(0);
    expect(fly.calls.filter((call) => call === `POST /v1/apps/${otherApp}/volumes`)).toHaveLength(1);
  });

  it('refuses a volume that is gone with VolumeLostError, after giving the app its IPs once', async () => {
    const provider = new FlyRuntimeProvider(app.config.agentRuntimes as Extract<typeof app.config.agentRuntimes, { provider: 'fly' }>);
    const spec = { agentId: 'a', instanceId: 'i', appName: 'lost-volume', type: 'runtime_a' as const, cpus: 1, memoryMb: 256, volumeSizeGb: 1, volumeRef: 'vol_gone', dailyTokenBudget: 1, serviceUrl: app.urls.api };
    await expect(provider.deploy(spec)).rejects.toBeInstanceOf(VolumeLostError);
    await expect(provider.deploy(spec)).rejects.toBeInstanceOf(VolumeLostError);
    expect(fly.ips.get('lost-volume')!.map((ip) => ip.type).sort()).toEqual(['shared_v4', 'v6']);
    expect(fly.calls.filter((call) => call.startsWith('POST /v1/apps/lost-volume/'))).toEqual(['POST /v1/apps/lost-volume/ip_assignments', 'POST /v1/apps/lost-volume/ip_assignments']);
    expect(fly.machineOf('lost-volume')).toBeNull();
    await provider.remove({ agentId: 'a', appName: 'lost-volume', volumeRef: 'vol_gone', machineRef: null });
    expect(fly.apps.has('lost-volume')).toBe(false);
  });
});

// A program in place of the runtime: echoes a request, and streams an event, the second only when told.
const STREAMING_PROGRAM = `
const http = require('node:http');
let release = () => {};
const server = http.createServer((request, response) => {
  if (request.url === '/events') {
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.write('data: first\\n\\n');
    release = () => response.end('data: second\\n\\n');
    return;
  }
  if (request.url === '/release') return void (release(), response.end('ok'));
  let body = '';
  request.on('data', (chunk) => (body += chunk)).on('end', () =>
    response.writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ method: request.method, url: request.url, header: request.headers['x-test'] ?? null, body, agentId: process.env.AGENT_ID })),
  );
});
server.listen(Number(process.env.AGENT_RUNTIME_PORT), '127.0.0.1', () => console.log('agent runtime listening http://127.0.0.1:' + server.address().port));
`;

describe("the stand-in's proxy", () => {
  it('routes only apps with a public IP, forwards the request and streams the answer as it comes', async () => {
    const standIn = await startFlyStandIn(FLY_TOKEN, { program: ['-e', STREAMING_PROGRAM] });
    try {
      await flyApi(standIn, 'POST', '/v1/apps', { app_name: 'streamer', org_slug: 'tollgate' });
      await flyApi(standIn, 'POST', '/v1/apps/streamer/machines', {
        config: { image: 'i', env: { AGENT_ID: 'a1', AGENT_RUNTIME_PORT: '8080' }, guest: { cpu_kind: 'shared', cpus: 1, memory_mb: 256 }, mounts: [], restart: { policy: 'always' } },
      });
      const machine = standIn.machineOf('streamer')!;
      expect(await standIn.waitForState(machine, 'started')).toBe(true);
      const app = `${standIn.url}/apps/streamer`;

      // A started machine, but no public IP: no connection (nor with a private Flycast address only).
      await expect(fetch(`${app}/echo`)).rejects.toThrow();
      await flyApi(standIn, 'POST', '/v1/apps/streamer/ip_assignments', { type: 'private_v6' });
      await expect(fetch(`${app}/echo`)).rejects.toThrow();
      await expect(fetch(`${standIn.url}/apps/nobody/echo`)).rejects.toThrow();
      const v6 = await flyApi(standIn, 'POST', '/v1/apps/streamer/ip_assignments', { type: 'v6' });
      expect(v6).toMatchObject({ ip: expect.stringContaining(':'), shared: false });
      expect((await flyApi(standIn, 'GET', '/v1/apps/streamer/ip_assignments')).ips).toHaveLength(2);

      const echo = await fetch(`${app}/echo?x=1`, { method: 'PUT', headers: { 'x-test': 'yes', 'content-type': 'text/plain' }, body: 'hello' });
      expect(await echo.json()).toEqual({ method: 'PUT', url: '/echo?x=1', header: 'yes', body: 'hello', agentId: 'a1' });

      const events = await fetch(`${app}/events`);
      expect(events.headers.get('content-type')).toBe('text/event-stream');
      const reader = events.body!.getReader();
      const decoder = new TextDecoder();
      // The first event arrives while the program still holds the answer open: nothing is buffered.
      expect(decoder.decode((await reader.read()).value)).toBe('data: first\n\n');
      await fetch(`${app}/release`);
      let rest = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value);
      expect(rest).toBe('data: second\n\n');

      // Reachable, but no started machine: Fly's proxy answers 503.
      await flyApi(standIn, 'POST', `/v1/apps/streamer/machines/${machine.id}/stop`, {});
      await flyApi(standIn, 'GET', `/v1/apps/streamer/machines/${machine.id}/wait?state=stopped&timeout=10`);
      expect([machine.state, machine.pid]).toEqual(['stopped', null]);
      expect((await fetch(`${app}/echo`)).status).toBe(503);
    } finally {
      await standIn.close();
    }
  });
});
