// Every role observable (issue 48 item 5): a worker-only node serves /health, /ready and /metrics on WORKER_PORT,
// and the image's HEALTHCHECK (bin/healthcheck.js) probes whichever listener the container's roles run, so a
// facilitator-only or worker-only container is healthy when it is, and unhealthy once it is gone.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { dataDirs } from '../helpers/cli.js';
import { NodeProcesses, stop } from '../helpers/cluster-nodes.js';
import { repositoryRoot } from '../helpers/readme.js';

const dirs = dataDirs();
const processes = new NodeProcesses();
afterAll(async () => {
  await processes.stopAll();
  dirs.removeAll();
});

const ports = { API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', WORKER_PORT: '0' };

async function healthcheck(dataDir: string): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(process.execPath, [path.join(repositoryRoot, 'bin/healthcheck.js')], { env: { ...process.env, TOLLGATE_DATA_DIR: dataDir }, timeout: 10_000 });
    return { code: 0, stderr: '' };
  } catch (error) {
    const e = error as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

// Embedded by design (DATABASE_URL=''): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('a worker-only node', () => {
  it('serves /health, /ready (its loops) and /metrics (the process-wide series) on WORKER_PORT', { timeout: 120_000 }, async () => {
    const server = await startServer({ config: loadConfig({ TOLLGATE_DATA_DIR: dirs.migrated(), ...ports, LOG_LEVEL: 'silent' }), roles: ['worker'], log: pino({ level: 'silent' }), adminSocket: false });
    try {
      expect(Object.keys(server.origins)).toEqual(['worker']);
      const base = server.listening.worker!;
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as { data: { commit: string } }).data.commit).toBeTruthy();
      await expect.poll(async () => (await fetch(`${base}/ready`)).status, { timeout: 30_000 }).toBe(200);
      const ready = (await (await fetch(`${base}/ready`)).json()) as { data: { checks: Record<string, { critical: boolean }> } };
      expect(ready.data.checks.loops).toMatchObject({ critical: true });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      for (const series of ['tollgate_loop_active{loop="events.sweeper"} 1', 'tollgate_db_pool_max_connections', 'process_cpu_user_seconds_total', 'tollgate_http_requests_total{origin="worker"']) {
        expect(metrics).toContain(series);
      }
      // Nothing else: no API, no facilitator.
      expect((await fetch(`${base}/v1/projects`)).status).toBe(404);
    } finally {
      await server.stop();
    }
  });
});

// Embedded by design (DATABASE_URL=''): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('the image HEALTHCHECK', () => {
  for (const roles of [['facilitator'], ['worker'], ['relay', 'assets']]) {
    it(`is healthy on a --roles ${roles.join(',')} node, and unhealthy once it stopped`, { timeout: 120_000 }, async () => {
      const dataDir = dirs.migrated();
      expect((await healthcheck(dataDir)).code).toBe(1); // nothing started yet
      const node = await processes.serve({ label: roles.join(','), roles, env: { TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', ...ports } });
      await expect.poll(async () => (await healthcheck(dataDir)).code, { timeout: 30_000 }).toBe(0);
      await stop(node);
      const after = await healthcheck(dataDir);
      expect(after.code).toBe(1);
      expect(after.stderr).toContain('unhealthy');
    });
  }
});
