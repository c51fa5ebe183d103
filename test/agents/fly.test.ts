// Agent runtimes on Fly Machines, through the adapter speaking the Machines REST API to a local stand-in:
// the app, volume and machine of a bought agent with its guest size and mount; a dead machine replaced on the
// same volume (never a new, empty one); a vanished volume refused; expiry stops the machine and removal
// deletes machine, volume and app.
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { startFlyStandIn } from './fly-stand-in.js';

const FLY_TOKEN = 'fly-test-token';
const clock = new ManualClock();
let fly: Awaited<ReturnType<typeof startFlyStandIn>>;
let app: TestApp;

beforeAll(async () => {
  fly = await startFlyStandIn(FLY_TOKEN);
  app = await buildTestApp({
    roles: ['api'],
    clock,
    env: { AGENT_RUNTIME_PROVIDER: 'fly', FLY_API_URL: fly.url, FLY_API_TOKEN: FLY_TOKEN, FLY_ORG_SLUG: 'tollgate', FLY_REGION: 'ams', AGENT_RUNTIME_IMAGE: 'registry.fly.io/tollgate-agent:1' },
  });
});
afterAll(async () => {
  await app?.close();
  await fly?.close();
});

const run = (name: string) => app.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === name)!.run(new AbortController().signal);

describe('agent runtimes on Fly Machines', () => {
  it('needs its settings', () => {
    expect(() => loadConfig({ AGENT_RUNTIME_PROVIDER: 'fly' })).toThrow(ConfigError);
    for (const name of ['FLY_API_TOKEN', 'FLY_ORG_SLUG', 'AGENT_RUNTIME_IMAGE']) expect(() => loadConfig({ AGENT_RUNTIME_PROVIDER: 'fly' })).toThrow(name);
    expect(() => loadConfig({ AGENT_RUNTIME_PROVIDER: 'fly', FLY_API_TOKEN: 't', FLY_ORG_SLUG: 'o', AGENT_RUNTIME_IMAGE: 'i' })).not.toThrow();
  });

  it('deploys, replaces a dead machine on the same volume, stops at expiry and removes everything a week later', async () => {
    await adminCommands(app.ctx, app.modules)['credits.grant']!({ sub: 'flyer', cents: 1000, note: 'test' });
    const token = await app.identityToken('flyer');
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await fetch(`${app.urls.api}/agents`, { method: 'POST', headers, body: JSON.stringify({ name: 'on fly', type: 'runtime_b' }) });
    const list = async () => ((await (await fetch(`${app.urls.api}/agents`, { headers })).json()) as { data: any[] }).data[0];
    await run('agents.deploy');

    const agent = await list();
    expect(agent.status).toBe('running');
    const instance = agent.runtimeInstance;
    expect(instance).toMatchObject({ url: `https://${instance.appName}.fly.dev`, cpus: 1, memoryMb: 512, volumeSizeGb: 1 });
    expect(fly.apps.get(instance.appName)).toEqual({ org: 'tollgate' });
    expect([...fly.volumes.values()]).toEqual([expect.objectContaining({ app: instance.appName, size_gb: 1, region: 'ams' })]);
    const [first] = [...fly.machines.values()];
    expect(first!.state).toBe('started');
    expect(first!.config).toMatchObject({
      image: 'registry.fly.io/tollgate-agent:1',
      init: { entrypoint: ['node', '/app/dist/agent-runtime/main.js'] },
      guest: { cpus: 1, memory_mb: 512 },
      mounts: [{ volume: [...fly.volumes.keys()][0], path: '/data' }],
      env: { AGENT_ID: agent.id, AGENT_TYPE: 'runtime_b', INSTANCE_ID: instance.id, AGENT_RUNTIME_DATA_DIR: '/data', AGENT_DAILY_TOKEN_BUDGET: '200000' },
    });
    // The runtime's token is in the machine's environment and, sealed, on the instance row.
    const runtimeToken = first!.config.env.AGENT_RUNTIME_TOKEN!;
    expect(runtimeToken).toMatch(/^[0-9a-f]{64}$/);
    const [row] = await app.ctx.database.query<{ sealed_token: string; volume_ref: string }>(sql`select sealed_token, volume_ref from agent_instances where id = ${instance.id}`);
    expect(row!.sealed_token).not.toContain(runtimeToken);

    // The machine dies: the sweep replaces it, adopting the same volume.
    first!.state = 'stopped';
    await run('agents.runtimes');
    const machines = [...fly.machines.values()];
    expect(machines.map((m) => m.state)).toEqual(['destroyed', 'started']);
    expect(machines[1]!.config.mounts).toEqual(first!.config.mounts);
    expect(fly.volumes.size).toBe(1);
    expect((await list()).runtimeInstance).toMatchObject({ id: instance.id, startedAt: instance.startedAt, expiresAt: instance.expiresAt });

    // A volume that vanished is not replaced by an empty one: the sweep leaves the runtime down.
    const volume = fly.volumes.get(row!.volume_ref)!;
    machines[1]!.state = 'destroyed';
    fly.volumes.delete(volume.id);
    await run('agents.runtimes');
    expect(fly.volumes.size).toBe(0);
    expect([...fly.machines.values()].filter((m) => m.state !== 'destroyed')).toEqual([]);
    fly.volumes.set(volume.id, volume);
    await run('agents.runtimes');
    const third = [...fly.machines.values()].at(-1)!;
    expect(third.state).toBe('started');

    // The month ends: the machine stops; a week later machine, volume and app are deleted.
    clock.advance(30 * 24 * 3600_000);
    await run('agents.runtimes');
    expect(third.state).toBe('stopped');
    expect((await list()).status).toBe('expired');
    clock.advance(7 * 24 * 3600_000);
    await run('agents.runtimes');
    expect(third.state).toBe('destroyed');
    expect(fly.volumes.size).toBe(0);
    expect(fly.apps.has(instance.appName)).toBe(false);
    expect((await list()).runtimeInstance.removedAt).toBe(clock.now().toISOString());
  });
});
