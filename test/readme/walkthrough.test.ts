// The README's walkthrough, run as written: the block between <!-- walkthrough --> markers goes to bash
// unchanged, beside a real `tollgate serve` on a fresh data dir (ports picked free, so the script is told the
// api origin through TOLLGATE, the one variable the README names for that).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walkthroughScript } from '../helpers/readme.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-walkthrough-'));
const env = { ...process.env, TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' };
let server: ChildProcess;
let api: string;


/** `npm start`'s equivalent: resolves with the api origin once serve prints it. */
function startServer(): Promise<string> {
  server = spawn(process.execPath, [path.join(root, 'bin/tollgate.js'), 'serve'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk;
      const url = output.match(/^api\s+(http:\/\/\S+)$/m)?.[1];
      if (url) resolve(url);
    };
    server.stdout!.on('data', read);
    server.stderr!.on('data', read);
    server.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
}

// Embedded by design (DATABASE_URL=''): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('the README walkthrough', () => {
  beforeAll(async () => {
    api = await startServer();
  }, 90_000);
  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('gets from a running instance to a paid ping and a paid intent', async () => {
    const script = walkthroughScript();
    expect(script).toContain('npx tsx examples/walkthrough.ts intent');
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: root,
      env: { ...env, TOLLGATE: api },
      timeout: 150_000,
    });
    expect(stdout).toContain('upstream 200 {"message":"paid pong"}');
    expect(stdout).toMatch(/^payment settled 100 units, transaction 0x[0-9a-f]{64}$/m);
    expect(stdout).toMatch(/^intent \S+ pending, pay at http:\/\/\S+\/pay$/m);
    expect(stdout).toMatch(/^payment settled, transaction 0x[0-9a-f]{64}$/m);
    expect(stdout).toMatch(/^intent \S+ settled$/m);
  }, 180_000);
});
