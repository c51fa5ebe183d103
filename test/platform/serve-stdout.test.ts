// stdout is the log's JSON lines only (issue 48 item 6), so a log shipper can parse every line: the banner
// (`api http://…`, `roles …`) and the drain line are for people and go to stderr, and the same facts are one
// JSON line each (`listening`, `draining requests and stopping`). LOG_LEVEL=silent means silent: no JSON at
// all, the stderr lines stay.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { migratedDataDir } from '../helpers/database.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** `tollgate serve` on a fresh embedded data dir until its banner's `roles` line, then SIGTERM: all it wrote. */
async function serveAndStop(logLevel: string) {
  const dataDir = migratedDataDir('tollgate-stdout-');
  dirs.push(dataDir);
  const child = spawn(process.execPath, [bin, 'serve'], {
    env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: logLevel, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  // 'close': the process has exited and both streams are read to their end.
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/^roles/m.test(stderr)) resolve();
      });
      void closed.then((code) => reject(new Error(`serve exited (${code}) before its banner:\n${stderr}\n${stdout}`)));
    });
    const api = /^api\s+(http:\/\/\S+)$/m.exec(stderr)?.[1];
    expect(api, stderr).toBeTruthy();
    expect((await fetch(`${api}/health`)).status).toBe(200);
    child.kill('SIGTERM');
    const code = await closed;
    return { code, stdout, stderr, api: api!, dataDir };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

// Embedded by design (its own data dir, PGlite and devchain): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('tollgate serve: stdout is JSON lines only', () => {
  it('every stdout line parses as JSON, one names the origins and roles; the banner and the drain line are on stderr', { timeout: 120_000 }, async () => {
    const { code, stdout, stderr, api, dataDir } = await serveAndStop('info');
    expect(code, stderr).toBe(0);

    const lines = stdout.split('\n').filter((line) => line !== '');
    const parsed = lines.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`a stdout line that is not JSON: ${line}`);
      }
    });
    const listening = parsed.filter((line) => line.msg === 'listening');
    expect(listening).toHaveLength(1);
    const rpc = /devchain (http:\/\/\S+)$/m.exec(stderr)?.[1];
    expect(listening[0]).toMatchObject({
      level: 30,
      origins: { api, facilitator: expect.stringMatching(/^http:\/\//), relay: expect.stringMatching(/^http:\/\//), assets: expect.stringMatching(/^http:\/\//) },
      data: dataDir,
      chain: { devchain: rpc },
      roles: ['api', 'facilitator', 'relay', 'assets', 'worker'],
    });
    expect(parsed.filter((line) => line.msg === 'draining requests and stopping')).toMatchObject([{ signal: 'SIGTERM' }]);

    // What people read, unchanged, on stderr.
    expect(stderr).toMatch(/^api {10}http:\/\/127\.0\.0\.1:\d+$/m);
    expect(stderr).toMatch(new RegExp(`^data {9}${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    expect(stderr).toMatch(/^chain {8}\S+ devchain http:\/\/\S+$/m);
    expect(stderr).toMatch(/^roles {8}api, facilitator, relay, assets, worker$/m);
    expect(stderr).toMatch(/^SIGTERM: draining requests and stopping$/m);
  });

  it('LOG_LEVEL=silent: nothing on stdout, the banner and the drain line still on stderr', { timeout: 120_000 }, async () => {
    const { code, stdout, stderr } = await serveAndStop('silent');
    expect(code, stderr).toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^api\s+http:\/\/\S+$/m);
    expect(stderr).toMatch(/^SIGTERM: draining requests and stopping$/m);
  });
});
