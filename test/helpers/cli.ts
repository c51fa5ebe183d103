// Runs the real CLI (`bin/tollgate.js`) as a child process, as an operator's shell would.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { seedDataDir } from './database.js';

const run = promisify(execFile);

/** `tollgate ...args` with `env` over this process's (embedded database, quiet logs); never throws. */
export async function cli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout } = await run(process.execPath, ['bin/tollgate.js', ...args], { env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: '', ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr: '' };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * Data dirs for CLI runs, removed by `removeAll` (call it in afterAll): `create` an empty one (a first start: initdb
 * and every migration), `migrated` one whose embedded database starts migrated (seedDataDir).
 */
export function dataDirs() {
  const dirs: string[] = [];
  const create = (): string => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-'));
    dirs.push(dir);
    return dir;
  };
  return {
    create,
    migrated(): string {
      const dir = create();
      seedDataDir(dir);
      return dir;
    },
    removeAll: () => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })),
  };
}
