// The container image without Docker: the files the Dockerfile's final stage copies (read from the
// Dockerfile itself), laid out in a fresh directory with no src/, must run the service from dist/ alone:
// healthy on a fresh data dir, and no rebuild attempted.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** [from, to] of each COPY in the final stage; `--from=build` paths are under /app, which mirrors the repo. */
function finalStageCopies(dockerfile: string): Array<[string, string]> {
  const stages = dockerfile.split(/^FROM /m);
  const copies: Array<[string, string]> = [];
  for (const line of stages.at(-1)!.split('\n')) {
    const match = line.match(/^COPY (?:--from=build )?(.+)$/);
    if (!match) continue;
    const parts = match[1]!.trim().split(/\s+/);
    const to = parts.pop()!;
    for (const from of parts) copies.push([from.replace(/^\/app\//, ''), to.endsWith('/') ? path.join(to, path.basename(from)) : to === './' ? path.basename(from) : to]);
  }
  return copies;
}

const dirs: string[] = [];
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

// Embedded by design (DATABASE_URL=''): the PostgreSQL pass would run it again unchanged.
describe.skipIf(Boolean(process.env.DATABASE_URL))('the Dockerfile image layout', () => {
  it('serves from dist/ alone: /ready answers 200 on a fresh data dir', async () => {
    const image = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-image-'));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-image-data-'));
    dirs.push(image, dataDir);
    const copies = finalStageCopies(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
    expect(copies.map(([from]) => from)).toEqual(expect.arrayContaining(['node_modules', 'dist', 'bin', 'migrations']));
    for (const [from, to] of copies) {
      const target = path.join(image, to);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      // node_modules is large: a link is the same files (the build stage's are the production subset).
      if (from === 'node_modules') fs.symlinkSync(path.join(root, from), target);
      else fs.cpSync(path.join(root, from), target, { recursive: true });
    }
    expect(fs.existsSync(path.join(image, 'src'))).toBe(false);
    const stamp = path.join(image, 'dist/.stamp');
    const builtAt = fs.statSync(stamp).mtimeMs;

    const child = spawn(process.execPath, [path.join(image, 'bin/tollgate.js'), 'serve'], {
      cwd: image,
      env: { ...process.env, TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    try {
      await expect.poll(() => output.match(/^api\s+(http:\/\/\S+)$/m)?.[1], { timeout: 60_000 }).toBeTruthy();
      const api = output.match(/^api\s+(http:\/\/\S+)$/m)![1];
      await expect.poll(async () => (await fetch(`${api}/ready`).catch(() => null))?.status, { timeout: 30_000 }).toBe(200);
      expect(fs.statSync(stamp).mtimeMs).toBe(builtAt); // not rebuilt
      // The pages ship prebuilt (web/dist): the dashboard answers without web/ sources or Vite.
      expect(fs.existsSync(path.join(image, 'web/vite.config.ts'))).toBe(false);
      expect((await fetch(`${api}/app/`)).status).toBe(200);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    expect(child.exitCode, output).toBe(0);
  }, 150_000); // its own waits: 60 s for a first start (a fresh database, the devchain's contracts) and 30 s for /ready
});
