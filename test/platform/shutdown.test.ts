import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { isRunning } from '../helpers/processes.js';
import { migratedDataDir } from '../helpers/database.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/tollgate.js');
const dataDir = migratedDataDir('tollgate-shutdown-');
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

// `npm start` as an operator runs it: SIGTERM must drain, stop the devchain it spawned and exit 0.
describe.skipIf(Boolean(process.env.DATABASE_URL))('tollgate serve on SIGTERM', () => {
  it('stops the anvil it spawned, removes the admin socket and exits 0', async () => {
    const child = spawn(process.execPath, [bin, 'serve'], {
      env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
      // The banner is on stderr; stdout (the JSON log) goes to the test's output.
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let output = '';
    const apiUrl = await new Promise<string>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /^roles/m.test(output) && /^api\s+(\S+)$/m.exec(output);
        if (match) resolve(match[1]);
      });
      void exited.then(() => reject(new Error(`exited early:\n${output}`)));
    });
    const anvilPid = Number(fs.readFileSync(path.join(dataDir, 'chain', 'anvil.pid'), 'utf8'));
    expect(isRunning(anvilPid)).toBe(true);
    expect(fs.existsSync(path.join(dataDir, 'admin.sock'))).toBe(true);

    expect((await fetch(`${apiUrl}/health`)).status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(isRunning(anvilPid)).toBe(false);
    expect(fs.existsSync(path.join(dataDir, 'admin.sock'))).toBe(false);
  }, 120_000);
});
