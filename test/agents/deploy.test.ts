// Agent runtimes on this machine (the local provider): a bought agent is deployed by the worker as its own
// process with its own port and volume; a runtime that died is started again on the same volume (its
// configuration kept); at the end of the month it is stopped, a week later its volume removed. A deployment
// that keeps failing gives up after 5 tries and refunds the purchase, once.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { ManualClock } from '../../src/platform/clock.js';
import { agentsModule, createAgentsModule } from '../../src/modules/agents/routes.js';
import { LocalRuntimeProvider } from '../../src/modules/agents/local-provider.js';
import { moduleFactories } from '../../src/modules/index.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { isRunning } from '../helpers/processes.js';

const clock = new ManualClock();
let app: TestApp;
beforeAll(async () => {
  // No worker role: the test runs the loops itself, against the manual clock.
  app = await buildTestApp({ roles: ['api'], clock });
});
afterAll(async () => app?.close());

const loop = (target: TestApp, name: string) => target.modules.find((m) => m.name === 'agents')!.loops!.find((l) => l.name === name)!;
const run = (target: TestApp, name: string) => loop(target, name).run(new AbortController().signal);

async function buyAgent(target: TestApp, sub: string) {
  await adminCommands(target.ctx, target.modules)['credits.grant']!({ sub, cents: 1000, note: 'test' });
  const token = await target.identityToken(sub);
  const response = await fetch(`${target.urls.api}/agents`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'deployed', type: 'runtime_a' }),
  });
  expect(response.status).toBe(201);
  const list = async () => {
    const answer = (await (await fetch(`${target.urls.api}/agents`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: any[] };
    return answer.data[0];
  };
  return { id: ((await response.json()) as { data: { agent: { id: string } } }).data.agent.id, list };
}

describe('agent runtimes (local provider)', () => {
  it('deploys a bought agent as its own process, restarts it on its volume, stops it after a month and removes it a week later', async () => {
    const { list } = await buyAgent(app, 'runner');
    expect((await list()).status).toBe('pending');
    await run(app, 'agents.deploy');

    const agent = await list();
    expect(agent).toMatchObject({ status: 'running', attempts: 1, lastError: null });
    const instance = agent.runtimeInstance;
    // A loopback address is the service's own business: users see null.
    expect(instance).toMatchObject({ url: null, cpus: 1, memoryMb: 512, volumeSizeGb: 1, stoppedAt: null, removedAt: null });
    expect(new Date(instance.expiresAt).getTime() - new Date(instance.startedAt).getTime()).toBe(30 * 24 * 3600_000);
    const urlOf = async () => (await app.ctx.database.query<{ url: string }>(sql`select url from agent_instances where id = ${instance.id}`))[0]!.url;
    instance.url = await urlOf();
    expect(instance.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = (await (await fetch(`${instance.url}/health`)).json()) as { ok: boolean; instanceId: string };
    expect(health).toMatchObject({ ok: true, instanceId: instance.id });
    expect((await fetch(`${instance.url}/probe`)).status).toBe(401); // the runtime's token stays with the service
    const [row] = await app.ctx.database.query<{ volume_ref: string; machine_ref: string }>(sql`select volume_ref, machine_ref from agent_instances where id = ${instance.id}`);
    const config = JSON.parse(fs.readFileSync(path.join(row!.volume_ref, 'config.json'), 'utf8')) as { id: string; createdAt: string };

    // The runtime dies (as after a restart of the service): the sweep starts it again on the same volume.
    process.kill(Number(row!.machine_ref), 'SIGKILL');
    await expect.poll(async () => (await fetch(`${instance.url}/health`).catch(() => null))?.ok ?? false).toBe(false);
    await run(app, 'agents.runtimes');
    const restarted = (await list()).runtimeInstance;
    expect(restarted).toMatchObject({ id: instance.id, startedAt: instance.startedAt, expiresAt: instance.expiresAt });
    restarted.url = await urlOf();
    expect((await fetch(`${restarted.url}/health`)).ok).toBe(true);
    expect(JSON.parse(fs.readFileSync(path.join(row!.volume_ref, 'config.json'), 'utf8'))).toMatchObject(config);

    // The month ends: stopped; a week later the volume is removed.
    clock.advance(30 * 24 * 3600_000);
    await run(app, 'agents.runtimes');
    const expired = await list();
    expect(expired.status).toBe('expired');
    expect(expired.runtimeInstance.stoppedAt).toBe(clock.now().toISOString());
    expect(await fetch(`${restarted.url}/health`).catch(() => null)).toBeNull();
    expect(fs.existsSync(row!.volume_ref)).toBe(true);
    clock.advance(7 * 24 * 3600_000);
    await run(app, 'agents.runtimes');
    expect((await list()).runtimeInstance.removedAt).toBe(clock.now().toISOString());
    expect(fs.existsSync(row!.volume_ref)).toBe(false);
  });

  it('a runtime started by the local provider ends when the service that started it dies', async () => {
    // A parent process stands in for the service: it starts a runtime through the provider, prints its pid, and is SIGKILLed.
    const script = `
      import { LocalRuntimeProvider } from ${JSON.stringify(path.resolve('src/modules/agents/local-provider.ts'))};
      import pino from 'pino';
      const provider = new LocalRuntimeProvider(process.argv[1], pino({ level: 'silent' }));
      const started = await provider.deploy({ agentId: 'a', instanceId: 'i', appName: 'orphan-check', type: 'runtime_a', cpus: 1, memoryMb: 128, volumeSizeGb: 1, volumeRef: null, dailyTokenBudget: 1, serviceUrl: 'http://127.0.0.1:9' });
      console.log('runtime pid ' + started.machineRef);
      setInterval(() => {}, 1000);`;
    const volumes = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-orphan-'));
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, volumes], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const pid = await new Promise<number>((resolve, reject) => {
        let out = '';
        parent.stdout!.on('data', (chunk: Buffer) => {
          out += chunk;
          const match = out.match(/runtime pid (\d+)/);
          if (match) resolve(Number(match[1]));
        });
        parent.once('exit', () => reject(new Error(`parent exited: ${out}`)));
      });
      expect(isRunning(pid)).toBe(true);
      parent.kill('SIGKILL');
      await expect.poll(() => isRunning(pid), { timeout: 10_000 }).toBe(false);
    } finally {
      parent.kill('SIGKILL');
      fs.rmSync(volumes, { recursive: true, force: true });
    }
  });

  it('gives up after 5 failed deployments, saying so without the internal error, and refunds the purchase once', async () => {
    // A volumes dir under a regular file: every deployment fails for real (ENOTDIR).
    const blocked = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-blocked-'));
    fs.writeFileSync(path.join(blocked, 'file'), '');
    const provider = createAgentsModule({ provider: (ctx) => new LocalRuntimeProvider(path.join(blocked, 'file', 'agents'), ctx.log) });
    const failing = await buildTestApp({ roles: ['api'], clock, factories: moduleFactories.map((factory) => (factory === agentsModule ? provider : factory)) });
    try {
      const { list } = await buyAgent(failing, 'unlucky');
      const credits = failing.ctx.services.credits;
      expect(await credits.balance('unlucky')).toBe(0);
      for (let attempt = 1; attempt <= 5; attempt += 1) {
        await run(failing, 'agents.deploy');
        const agent = await list();
        expect(agent.attempts).toBe(attempt);
        // The cause (ENOTDIR, with a path of this machine) is in the log; the user reads that it failed.
        expect(agent.lastError).toBe(`the runtime did not start (attempt ${attempt} of 5)`);
        expect(agent.status).toBe(attempt < 5 ? 'pending' : 'failed');
        // Not tried again before its next attempt is due.
        await run(failing, 'agents.deploy');
        expect((await list()).attempts).toBe(attempt);
        clock.advance(31_000);
      }
      expect(await credits.balance('unlucky')).toBe(1000);
      await run(failing, 'agents.deploy');
      expect(await credits.balance('unlucky')).toBe(1000);
      const transfers = await credits.store.transfersOf('user:unlucky');
      expect(transfers.map((t) => t.cause)).toEqual(['grant', 'agent_purchase', 'refund']);
      expect(transfers[2]!.refund_of).toBe(transfers[1]!.id);
    } finally {
      await failing.close();
      fs.rmSync(blocked, { recursive: true, force: true });
    }
  });
});
