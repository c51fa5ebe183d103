// GET /ready on every origin: the database (a real query), the chain RPC, relayer gas and the
// background loops. A database that fails every query makes the instance unready, and the watchdog
// gives the process up (exit code 70) so a supervisor restarts it; /health stays liveness.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { EXIT_DATABASE_LOST } from '../../src/platform/db-watchdog.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

const ready = async (base: string) => {
  const response = await fetch(`${base}/ready`);
  return { status: response.status, requestId: response.headers.get('x-request-id'), body: (await response.json()) as { code: number; message: string; data: { ready: boolean; checks: Record<string, { ok: boolean; reason?: string }> } } };
};

describe('/ready on a healthy instance', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp();
  });
  afterAll(async () => app?.close());

  it('answers 200 on every origin with the database, chain, relayer and loops checks passing', async () => {
    for (const base of [app.urls.api, app.urls.facilitator, app.urls.relay, app.urls.assets]) {
      // A check may miss its deadline once on a starved CI machine (a 503 once in a loaded run): healthy means it
      // answers 200 within a few seconds, and a check that never passes still fails here, named.
      let answer = await ready(base);
      for (const deadline = Date.now() + 10_000; answer.status !== 200 && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        answer = await ready(base);
      }
      const { status, requestId, body } = answer;
      expect(status, JSON.stringify(body.data?.checks)).toBe(200);
      expect(requestId).toBeTruthy();
      expect(body).toMatchObject({ code: 0, data: { ready: true } });
      expect(Object.keys(body.data.checks).sort()).toEqual(['chain', 'database', 'loops', 'relayer', 'relayer-float', 'relayer-public-float']);
      for (const check of Object.values(body.data.checks)) expect(check.ok).toBe(true);
    }
  });
});

describe('background loops', () => {
  it('a loop failing three times in a row makes /ready 503 naming it', async () => {
    let broken = true;
    const flaky: ModuleFactory = () => ({
      name: 'flaky',
      routes: {},
      loops: [{ name: 'flaky-loop', intervalMs: 10, run: async () => {
        if (broken) throw new Error('injected loop failure');
      } }],
    });
    const app = await buildTestApp({ factories: [...moduleFactories, flaky] });
    try {
      const deadline = Date.now() + 5_000;
      let answer = await ready(app.urls.api);
      while (answer.status === 200 && Date.now() < deadline) answer = await ready(app.urls.api);
      expect(answer.status).toBe(503);
      expect(answer.body.data.checks.loops).toMatchObject({ ok: false });
      expect(answer.body.data.checks.loops!.reason).toContain('flaky-loop');
      broken = false;
      const recovered = Date.now() + 5_000;
      while (answer.status !== 200 && Date.now() < recovered) answer = await ready(app.urls.api);
      expect(answer.status).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe('a database that fails every query', () => {
  it('turns /ready 503 naming the database, keeps /health 200, and the watchdog reports exit code 70', async () => {
    const lost: number[] = [];
    const app = await buildTestApp({ env: { DB_WATCHDOG_INTERVAL_MS: '50', DB_WATCHDOG_FAILURES: '3' }, onDatabaseLost: (code) => lost.push(code) });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(lost).toEqual([]); // a healthy database never trips it

      await app.testDatabase.database.close();
      const { status, body } = await ready(app.urls.api);
      expect(status).toBe(503);
      expect(body.code).not.toBe(0);
      expect(body.message).toContain('database');
      expect(body.data.checks.database).toMatchObject({ ok: false });
      expect(body.data.checks.chain).toMatchObject({ ok: true });
      expect((await fetch(`${app.urls.api}/health`)).status).toBe(200);

      const deadline = Date.now() + 5_000;
      while (!lost.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lost).toEqual([EXIT_DATABASE_LOST]);
    } finally {
      await app.close().catch(() => undefined);
    }
  });

  // The real process against a real server: its database is dropped under it, and it exits 70.
  it.runIf(process.env.DATABASE_URL)('`tollgate serve` exits with 70 when its PostgreSQL database disappears', async () => {
    const admin = async (sql: string) => {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(sql).finally(() => client.end());
    };
    const name = `tollgate_watchdog_${Math.random().toString(36).slice(2, 10)}`;
    await admin(`create database ${name}`);
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${name}`;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-watchdog-'));
    const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
    const child = spawn(process.execPath, [bin, 'serve'], {
      env: {
        ...process.env,
        TOLLGATE_DATA_DIR: dataDir,
        DATABASE_URL: url.toString(),
        API_PORT: '0',
        FACILITATOR_PORT: '0',
        RELAY_PORT: '0',
        ASSETS_PORT: '0',
        DEVCHAIN_PORT: '0',
        LOG_LEVEL: 'fatal',
        DB_WATCHDOG_INTERVAL_MS: '100',
        DB_WATCHDOG_FAILURES: '3',
      },
      // The banner is on stderr; stdout (the JSON log) goes to the test's output.
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let output = '';
      await new Promise<void>((resolve, reject) => {
        child.stderr!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          if (/^roles/m.test(output)) resolve();
        });
        void exited.then(() => reject(new Error(`serve exited early:\n${output}`)));
      });
      const api = /^api\s+(\S+)$/m.exec(output)![1]!;
      expect((await ready(api)).status).toBe(200);

      await admin(`drop database ${name} with (force)`);
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
      expect(code).toBe(EXIT_DATABASE_LOST);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
      await admin(`drop database if exists ${name} with (force)`);
    }
  }, 60_000);
});
