// The database and the chain open side by side at a start (src/server.ts): when one of them fails, the other is
// closed again before the error reaches the caller, so a failed start leaves no anvil running.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { isRunning } from '../helpers/processes.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-start-failure-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('a start whose database cannot be opened', () => {
  it('fails with the database error and stops the devchain it started meanwhile', { timeout: 60_000 }, async () => {
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line).msg) });
    // A port nothing listens on: the connection is refused at once, while anvil is still starting.
    const config = loadConfig({ TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', WORKER_PORT: '0' });
    await expect(startServer({ config, roles: ['api'], log, ephemeralSecrets: true, adminSocket: false })).rejects.toThrow(/ECONNREFUSED|connect/);
    const pid = Number(/devchain: anvil pid (\d+)/.exec(lines.join('\n'))?.[1]);
    expect(pid, lines.join('\n')).toBeGreaterThan(0);
    expect(isRunning(pid)).toBe(false);
  });
});
