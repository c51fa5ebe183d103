// How the CLI starts (issue 48 item 6): `npx tollgate` runs the workspace bin npm linked into node_modules/.bin
// at once, never going through npx's cache (which read the whole installed tree twice, ~1.6 s of CPU:
// bench/RESULTS.md); and a start that has to build first says so on stderr while it waits, leaving stdout
// to the command itself.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryRoot as root } from '../helpers/readme.js';

const run = promisify(execFile);
const dirs: string[] = [];
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-cli-start-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

describe('the tollgate command', () => {
  it('npx tollgate runs the linked bin directly: no bin on the root package, nothing put in npx\'s cache', { timeout: 60_000 }, async () => {
    // A bin on the root package makes npx install the checkout into its cache (and read the whole tree) first.
    expect(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).bin).toBeUndefined();
    expect(fs.realpathSync(path.join(root, 'node_modules/.bin/tollgate'))).toBe(path.join(root, 'packages/cli/tollgate.js'));

    const cache = tempDir();
    const { stdout } = await run('npx', ['--offline', 'tollgate', '--version'], { cwd: root, env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false' }, timeout: 30_000 });
    expect(stdout).toMatch(/^tollgate \d+\.\d+\.\d+/);
    expect(fs.existsSync(path.join(cache, '_npx')), "npx went through its cache (~/.npm/_npx)").toBe(false);
  });

  it('the image has the bin workspace: npm ci finds every workspace the lock names, and the link has its target', () => {
    const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { link?: boolean; resolved?: string }> };
    const workspaces = Object.values(lock.packages).filter((entry) => entry.link).map((entry) => entry.resolved!);
    expect(workspaces).toContain('packages/cli');
    const [build, final] = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8').split(/^FROM /m).slice(1);
    const beforeInstall = build!.slice(0, build!.indexOf('RUN npm ci'));
    for (const workspace of workspaces) expect(beforeInstall, workspace).toMatch(new RegExp(`^COPY ${workspace}(/package\\.json)? ${workspace}/?$`, 'm'));
    expect(final).toMatch(/^COPY packages\/cli packages\/cli$/m);
  });

  it('a start that builds says what it is doing on stderr; stdout carries only the command\'s own output', { timeout: 180_000 }, async () => {
    // A checkout in miniature: our bin/ over a one-file src/ and a one-page web/, with the real node_modules.
    const checkout = tempDir();
    fs.mkdirSync(path.join(checkout, 'bin'));
    for (const file of ['build.js', 'tollgate.js']) fs.copyFileSync(path.join(root, 'bin', file), path.join(checkout, 'bin', file));
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(checkout, 'node_modules'));
    fs.writeFileSync(path.join(checkout, 'package.json'), '{ "type": "module" }');
    fs.mkdirSync(path.join(checkout, 'src'));
    fs.writeFileSync(path.join(checkout, 'src/main.ts'), "const line: string = JSON.stringify({ msg: 'main ran', argv: process.argv.slice(2) });\nconsole.log(line);\n");
    fs.mkdirSync(path.join(checkout, 'web'));
    fs.writeFileSync(path.join(checkout, 'web/index.html'), '<!doctype html><title>t</title><p>page</p>\n');
    fs.writeFileSync(path.join(checkout, 'web/vite.config.ts'), "import { fileURLToPath } from 'node:url';\nexport default { root: fileURLToPath(new URL('.', import.meta.url)), logLevel: 'info' };\n");
    const tollgate = (...args: string[]) => run(process.execPath, [path.join(checkout, 'bin/tollgate.js'), ...args], { cwd: checkout, timeout: 120_000 });

    const first = await tollgate('serve');
    expect(first.stderr).toMatch(/^tollgate: building dist\/ from the 1 files of src\/ .*\.\.\.$/m);
    expect(first.stderr).toMatch(/^tollgate: built dist\/ in \d+ ms$/m);
    expect(first.stderr).toMatch(/^tollgate: building the web pages into web\/dist\/ with Vite .*\.\.\.$/m);
    expect(first.stderr).toMatch(/^tollgate: built web\/dist\/ in \d+ ms$/m);
    // Vite's own report (the fixture's config asks for logLevel info): none of it on stdout.
    expect(first.stdout).toBe('{"msg":"main ran","argv":["serve"]}\n');
    expect(fs.existsSync(path.join(checkout, 'web/dist/index.html'))).toBe(true);

    // Nothing to build: nothing said.
    const again = await tollgate('serve');
    expect(again.stderr).toBe('');
    expect(again.stdout).toBe('{"msg":"main ran","argv":["serve"]}\n');
    // A command other than serve builds src/ only, and says so.
    fs.appendFileSync(path.join(checkout, 'src/main.ts'), '// changed\n');
    const status = await tollgate('status');
    expect(status.stderr).toMatch(/^tollgate: building dist\/ /m);
    expect(status.stderr).not.toMatch(/web pages/);
    expect(status.stdout).toBe('{"msg":"main ran","argv":["status"]}\n');
  });
});
