// @tollgate/client as someone outside the repository gets it: `npm pack` (its prepack builds dist/) makes a
// tarball, an empty project installs it, and a plain Node ESM program and a CommonJS TypeScript project
// (moduleResolution node10, the repo's tsc) import it, typecheck against it and call a running instance.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTollgateClient } from '@tollgate/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const packageDir = path.join(root, 'packages/client');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-client-package-'));
const consumer = path.join(work, 'consumer');
// The nested npm and node runs get a plain shell's environment: not this run's npm script context, and no
// NODE_OPTIONS that could add resolution conditions a user's node would not have.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(npm_lifecycle_|npm_package_|npm_command$|NODE_OPTIONS$)/.test(name)));

const ESM_PROGRAM = `import { ConsumeError, consumeQueue, createTollgateClient } from '@tollgate/client';
const [baseUrl, token] = process.argv.slice(2);
const created = await createTollgateClient({ baseUrl, token }).POST('/v1/projects', { body: { name: 'from-esm' } });
const refused = await createTollgateClient({ baseUrl, token: 'svc_api_wrong' }).GET('/v1/event-queues');
const consumer = await consumeQueue(createTollgateClient({ baseUrl, token: 'svc_api_wrong' }), 'q', () => {}).catch((error) => error);
console.log(JSON.stringify({
  resolved: import.meta.resolve('@tollgate/client'),
  created: [created.response.status, created.data?.data.project.name],
  refused: [refused.response.status, refused.error?.code],
  consumer: [consumer instanceof ConsumeError, consumer.status],
}));
`;

const TS_PROGRAM = `import { ConsumeError, consumeQueue, createTollgateClient, type TollgateClient } from '@tollgate/client';

// Never called: the declarations must be real types, so each line below is a type error; a directive
// that expects one where none is (as with a client typed \`any\`) fails the compile.
export function typesOnly(client: TollgateClient): void {
  // @ts-expect-error the API has no such route
  void client.GET('/v1/no-such-route');
  // @ts-expect-error a project's name is a string
  void client.POST('/v1/projects', { body: { name: 1 } });
}

async function main(): Promise<void> {
  const [baseUrl, token] = process.argv.slice(2);
  const created = await createTollgateClient({ baseUrl: baseUrl!, token }).POST('/v1/projects', { body: { name: 'from-cjs' } });
  const name: string | undefined = created.data?.data.project.name;
  const refused = await createTollgateClient({ baseUrl: baseUrl!, token: 'svc_api_wrong' }).GET('/v1/event-queues');
  const code: number | undefined = refused.error?.code;
  const consumer: unknown = await consumeQueue(createTollgateClient({ baseUrl: baseUrl!, token: 'svc_api_wrong' }), 'q', () => undefined).catch((error: unknown) => error);
  console.log(JSON.stringify({
    resolved: require.resolve('@tollgate/client'),
    created: [created.response.status, name],
    refused: [refused.response.status, code],
    consumer: [consumer instanceof ConsumeError, consumer instanceof ConsumeError ? consumer.status : null],
  }));
}
void main();
`;

const TS_CONFIG = {
  compilerOptions: {
    module: 'commonjs',
    moduleResolution: 'node10',
    target: 'ES2022',
    strict: true,
    // As most projects have it (and 5 s less of checking @types/node): the declarations are still used by
    // main.ts, and a part of them that failed to resolve would be \`any\`, which typesOnly catches.
    skipLibCheck: true,
    rootDir: '.',
    outDir: 'out',
    // Only @types/node, from the repository: the consumer installs nothing but the tarball.
    typeRoots: [path.join(root, 'node_modules/@types')],
    types: ['node'],
  },
  files: ['main.ts'],
};

/** A package and its dependencies, copied from the repository's node_modules (npm then finds them installed). */
function seed(name: string, into: string): void {
  const target = path.join(into, 'node_modules', name);
  if (fs.existsSync(target)) return;
  const source = path.join(root, 'node_modules', name);
  fs.cpSync(source, target, { recursive: true, dereference: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(source, 'package.json'), 'utf8'));
  for (const dependency of Object.keys(manifest.dependencies ?? {})) seed(dependency, into);
}

let app: TestApp;
let token: string;
let packed: { filename: string; files: { path: string }[] };

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  token = await app.identityToken('package-consumer');

  // No dist/ beforehand: what the tarball holds is what prepack built.
  fs.rmSync(path.join(packageDir, 'dist'), { recursive: true, force: true });
  const pack = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: packageDir, env, timeout: 120_000 });
  packed = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('\n[') + 1))[0]; // prepack's own output comes first

  // The consumer: an empty project. The registry is not asked: the tarball's dependencies (openapi-fetch)
  // are seeded from the repository, at versions that must satisfy the ranges the tarball declares.
  fs.mkdirSync(consumer, { recursive: true });
  fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  const manifest = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
  for (const dependency of Object.keys(manifest.dependencies ?? {})) seed(dependency, consumer);
  await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(work, packed.filename)], { cwd: consumer, env, timeout: 120_000 });
}, 240_000);

afterAll(async () => {
  await app?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

/** The names of the projects the test user owns, read back through the service. */
async function projectNames(): Promise<string[]> {
  const { data } = await createTollgateClient({ baseUrl: app.urls.api, token }).GET('/v1/projects');
  return data!.data.map((project) => project.name);
}

describe('the @tollgate/client package', () => {
  it('packs the build, its declarations and the README, and installs as a public package', () => {
    expect(packed.files.map((file) => file.path).sort()).toEqual([
      'README.md',
      'dist/api.d.cts',
      'dist/api.d.ts',
      'dist/consume.cjs',
      'dist/consume.d.cts',
      'dist/consume.d.ts',
      'dist/consume.js',
      'dist/index.cjs',
      'dist/index.d.cts',
      'dist/index.d.ts',
      'dist/index.js',
      'package.json',
    ]);
    const installed = JSON.parse(fs.readFileSync(path.join(consumer, 'node_modules/@tollgate/client/package.json'), 'utf8'));
    expect(installed.private).toBeUndefined();
    expect(installed.exports['.']).toEqual({
      import: { types: './dist/index.d.ts', default: './dist/index.js' },
      require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
    });
  });

  it('is imported by a plain Node ESM program that calls the service', async () => {
    fs.writeFileSync(path.join(consumer, 'esm.mjs'), ESM_PROGRAM);
    const { stdout } = await run(process.execPath, ['esm.mjs', app.urls.api, token], { cwd: consumer, env, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      resolved: expect.stringMatching(/\/node_modules\/@tollgate\/client\/dist\/index\.js$/),
      created: [201, 'from-esm'],
      refused: [401, 1001],
      consumer: [true, 401],
    });
    expect(await projectNames()).toContain('from-esm');
  }, 120_000);

  it('typechecks in a CommonJS TypeScript project (node10 resolution) and calls the service from its compiled require', async () => {
    fs.writeFileSync(path.join(consumer, 'main.ts'), TS_PROGRAM);
    fs.writeFileSync(path.join(consumer, 'tsconfig.json'), JSON.stringify(TS_CONFIG, null, 2));
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
    const compiled = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: consumer, env, timeout: 120_000 }).catch((error) => error);
    expect(compiled.stdout, 'the consumer project does not typecheck').toBe('');
    expect(fs.readFileSync(path.join(consumer, 'out/main.js'), 'utf8')).toContain('require("@tollgate/client")');

    const { stdout } = await run(process.execPath, ['out/main.js', app.urls.api, token], { cwd: consumer, env, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      resolved: expect.stringMatching(/\/node_modules\/@tollgate\/client\/dist\/index\.cjs$/),
      created: [201, 'from-cjs'],
      refused: [401, 1001],
      consumer: [true, 401],
    });
    expect(await projectNames()).toContain('from-cjs');
  }, 180_000);
});
