// One instance per data dir: a second `serve` (or a CLI command that would open the data dir itself) is
// refused before it touches anything there, with exit code 3 and a message naming the data dir and the
// running instance; the running one keeps serving, anvil included. The lock dies with its holder: after a
// kill -9 the next start gets it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireDataDirLock } from '../../src/platform/data-dir-lock.js';
import { alive } from '../helpers/processes.js';
import { migratedDataDir } from '../helpers/database.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.pid && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, 'SIGKILL');
  dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
});

/** A data dir for `serve` (its embedded database already migrated), or an empty one. */
const dataDirFor = (use: 'serve' | 'empty') => {
  const dir = use === 'serve' ? migratedDataDir('tg-single-') : fs.mkdtempSync(path.join(os.tmpdir(), 'tg-single-'));
  dirs.push(dir);
  return dir;
};
const env = (dataDir: string) => ({
  ...process.env,
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  RELAY_PORT: '0',
  ASSETS_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  DATABASE_URL: '',
});

interface Instance {
  child: ChildProcess;
  exited: Promise<number | null>;
  api: string;
  rpc: string;
}

async function start(dataDir: string): Promise<Instance> {
  // Its own process group, so a failed test can take anvil down with it.
  // The banner is on stderr (stdout, the JSON log, goes to the test's output as stderr did).
  const child = spawn(process.execPath, [bin, 'serve'], { env: env(dataDir), detached: true, stdio: ['ignore', 'inherit', 'pipe'] });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal === 'SIGKILL' ? 137 : code)));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/^roles/m.test(output)) resolve();
    });
    void exited.then((code) => reject(new Error(`serve exited early (${code}):\n${output}`)));
  });
  return { child, exited, api: /^api\s+(\S+)$/m.exec(output)![1]!, rpc: /devchain (\S+)/.exec(output)![1]! };
}

/** Runs the CLI to its end. */
function run(args: string[], dataDir: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [bin, ...args], { env: env(dataDir), stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}


async function blockNumber(rpc: string): Promise<bigint> {
  const response = await fetch(rpc, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
  });
  return BigInt(((await response.json()) as { result: string }).result);
}

describe.skipIf(Boolean(process.env.DATABASE_URL))('one instance per data dir', () => {
  it('refuses a second serve (exit 3, naming the first) while the first keeps serving; kill -9 leaves no stale lock', async () => {
    const dataDir = dataDirFor('serve');
    const first = await start(dataDir);
    const anvilPidFile = path.join(dataDir, 'chain', 'anvil.pid');
    const anvilPid = Number(fs.readFileSync(anvilPidFile, 'utf8'));

    const second = await run(['serve'], dataDir);
    expect(second.code).toBe(3);
    expect(second.stderr).toMatch(
      new RegExp(`^tollgate: data dir ${dataDir} is in use by another Tollgate instance \\(pid ${first.child.pid}, started [0-9T:.Z-]+, api ${first.api}\\); stop it first or set TOLLGATE_DATA_DIR to another directory\\n$`),
    );
    // `migrate` would open the same PGlite: refused the same way.
    const migrate = await run(['migrate'], dataDir);
    expect(migrate.code).toBe(3);
    expect(migrate.stderr).toContain(`pid ${first.child.pid}`);

    // The first is untouched: its anvil was not reaped as an orphan, and both still answer.
    expect(fs.readFileSync(anvilPidFile, 'utf8').trim()).toBe(String(anvilPid));
    expect(alive(anvilPid)).toBe(true);
    expect((await fetch(`${first.api}/health`)).status).toBe(200);
    expect(await blockNumber(first.rpc)).toBeGreaterThanOrEqual(0n);
    // And the CLI reaches it through its admin socket as before.
    const token = await run(['dev', 'token', '--sub', 'alice'], dataDir);
    expect(token.code, token.stderr).toBe(0);

    // kill -9: nothing runs the process's stop, its anvil stays behind as an orphan.
    first.child.kill('SIGKILL');
    await first.exited;
    const third = await start(dataDir);
    try {
      expect((await fetch(`${third.api}/health`)).status).toBe(200);
      expect(alive(anvilPid)).toBe(false);
    } finally {
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
    }
  }, 180_000);

  it('the CLI says so when an instance holds the data dir but its admin socket does not answer, and opens nothing', async () => {
    const dataDir = dataDirFor('empty');
    // A holder that never opens an admin socket: an instance still starting, or hung.
    const lock = await acquireDataDirLock(dataDir, { command: 'serve', roles: ['api'] });
    lock.record({ urls: { api: 'http://127.0.0.1:8402' } });
    try {
      const result = await run(['dev', 'token', '--sub', 'alice'], dataDir);
      expect(result.code).toBe(3);
      expect(result.stderr).toContain(`data dir ${dataDir} is in use by a Tollgate instance (pid ${process.pid}, started `);
      expect(result.stderr).toContain(`api http://127.0.0.1:8402), but its admin socket ${path.join(dataDir, 'admin.sock')} did not answer`);
      expect(fs.readdirSync(dataDir).sort()).toEqual(['instance.json', 'lock.sock']);
    } finally {
      await lock.release();
    }
  }, 60_000);
});
