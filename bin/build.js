// The compiled build: the service (src/main.ts) and the agent runtime (src/agent-runtime/main.ts) bundled by
// esbuild with their dependencies into dist/ (ES modules, split into chunks that load as a command needs them).
// One bundle instead of ~2,400 files from src/ and node_modules takes ~1.2 s of CPU off every start
// (bench/RESULTS.md, bench/startup). Files the service reads at run time are found from the project's root
// (src/platform/project-root.ts), not from a module's place. Type checking stays with `npm run typecheck`.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
export const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.stamp');
const LOCK = join(ROOT, '.dist.lock');
const LOCK_STALE_MS = 60_000;

function sources(dir = SRC, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

/**
 * Dependencies left in node_modules: native or WASM code, files read beside their own module (__dirname), worker
 * threads started from a file (pino's transports), and packages loaded only on demand (ccxt) or only by tools.
 */
const EXTERNAL = [
  '@electric-sql/pglite',
  '@fastify/swagger',
  '@fastify/swagger-ui',
  '@foundry-rs/anvil',
  'bufferutil',
  'ccxt',
  'esbuild',
  'pg-native',
  'pino',
  'playwright-core',
  'rabin-wasm',
  'sharp',
  'solc',
  'thread-stream',
];

/**
 * What the build was made from: a hash of every source's path and content (about 10 ms), so any edit,
 * addition or removal changes it, and a checkout or copy that only touches mtimes does not.
 */
function fingerprint(files, base = SRC) {
  const hash = createHash('sha256');
  for (const file of [...files].sort()) hash.update(`${relative(base, file)}\0`).update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

function isFresh(print, stamp = STAMP) {
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === print;
}

async function compile(print) {
  const { build } = await import('esbuild');
  const out = `${DIST}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  await build({
    entryPoints: [join(SRC, 'main.ts'), join(SRC, 'agent-runtime', 'main.ts')].filter((entry) => existsSync(entry)),
    outdir: out,
    outbase: SRC,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    external: EXTERNAL,
    // Bundled CommonJS dependencies call require(): ES modules have none of their own.
    banner: { js: "import { createRequire as __tollgateRequire } from 'node:module'; const require = __tollgateRequire(import.meta.url);" },
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    // Stack traces name src/ lines; the maps need not carry every bundled file's text (they would be 20 MB).
    sourcesContent: false,
    logLevel: 'error',
  });
  writeFileSync(join(out, '.stamp'), print);
  keepPreviousChunks(DIST, out);
  rmSync(DIST, { recursive: true, force: true });
  renameSync(out, DIST);
}

/**
 * A running service loads some chunks only when first needed (an admin command's, the agent runtime's tokenizer)
 * from the build it started with, whose chunk names (content hashes) a rebuild changes: the previous build's chunks
 * stay beside the new ones, so a service started before one rebuild still finds them (not those of earlier builds:
 * each build is ~10 MB). A chunk is the previous build's when it was written with its stamp, not kept from before.
 */
function keepPreviousChunks(from, to) {
  const dir = join(from, 'chunks');
  const stamp = join(from, '.stamp');
  if (!existsSync(dir) || !existsSync(stamp)) return;
  const builtAt = statSync(stamp).mtimeMs;
  for (const name of readdirSync(dir)) {
    const [chunk, target] = [join(dir, name), join(to, 'chunks', name)];
    if (name.endsWith('.js') && !existsSync(target) && statSync(chunk).mtimeMs > builtAt - 60_000) renameSync(chunk, target);
  }
}

/** Another process holds the lock while it builds; wait for it (or take over a lock it left behind). */
async function withLock(fn) {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      } catch {}
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** What the build is made from besides src/: the lock file (the dependencies bundled in) and how it is built. */
const BUILD_FILES = [join(ROOT, 'package-lock.json'), join(ROOT, 'tsconfig.json'), fileURLToPath(import.meta.url)];
const buildInputs = (files) => [...files, ...BUILD_FILES.filter((file) => existsSync(file))];

/**
 * Builds dist/ unless it already matches src/ (or there is no src/: an image that ships dist/ only). Returns whether it built.
 * `say` hears what a start is waiting for (bin/tollgate.js writes it to stderr: stdout stays the command's own).
 */
export async function ensureBuilt(say = () => {}) {
  if (!existsSync(SRC)) return false;
  if (isFresh(fingerprint(buildInputs(sources())))) return false;
  return withLock(async () => {
    const files = sources();
    const print = fingerprint(buildInputs(files));
    if (isFresh(print)) return false; // another process built it while we waited
    const started = performance.now();
    say(`building dist/ from the ${files.length} files of src/ (they or the lock file changed since the last build, or there is none yet) ...`);
    await compile(print);
    say(`built dist/ in ${Math.round(performance.now() - started)} ms`);
    return true;
  });
}

// The web pages (web/, Vite) build into web/dist the same way: only when their sources changed, into a
// temporary directory renamed into place, so a running server never reads a half-written build.
const WEB = join(ROOT, 'web');
const WEB_DIST = join(WEB, 'dist');
const WEB_STAMP = join(WEB_DIST, '.stamp');

function webSources(dir = WEB, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('dist')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) webSources(path, out);
    else out.push(path);
  }
  return out;
}

/** Builds web/dist unless it matches web/ (or there is no web/ source: an image that ships web/dist). Returns whether it built. */
export async function ensureWebBuilt(say = () => {}) {
  if (!existsSync(join(WEB, 'vite.config.ts'))) return false;
  if (isFresh(fingerprint(webSources(), WEB), WEB_STAMP)) return false;
  return withLock(async () => {
    const print = fingerprint(webSources(), WEB);
    if (isFresh(print, WEB_STAMP)) return false;
    const started = performance.now();
    say('building the web pages into web/dist/ with Vite (web/ changed since the last build, or there is none yet; a first build can take a minute or more) ...');
    const { build } = await import('vite');
    const out = `${WEB_DIST}.tmp-${process.pid}`;
    // Vite reports on stdout below `warn` (whatever web/vite.config.ts says): a start's stdout is the service's JSON log.
    await build({ configFile: join(WEB, 'vite.config.ts'), logLevel: 'warn', build: { outDir: out, emptyOutDir: true } });
    writeFileSync(join(out, '.stamp'), print);
    rmSync(WEB_DIST, { recursive: true, force: true });
    renameSync(out, WEB_DIST);
    say(`built web/dist/ in ${Math.round(performance.now() - started)} ms`);
    return true;
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [what, ensure] of [['dist/', ensureBuilt], ['web/dist/', ensureWebBuilt]]) {
    const started = performance.now();
    const built = await ensure();
    console.log(built ? `built ${what} in ${Math.round(performance.now() - started)} ms` : `${what} is up to date`);
  }
}
