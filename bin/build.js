// The compiled build: src/**/*.ts (tests excluded) transpiled file by file with esbuild into dist/,
// keeping the tree, so `dist/x/y.js` sits where `src/x/y.ts` did and relative paths (migrations,
// contracts) resolve the same. Type checking stays with `npm run typecheck`; this only strips types.
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

async function compile(files, print) {
  const { build } = await import('esbuild');
  const out = `${DIST}.tmp-${process.pid}`;
  rmSync(out, { recursive: true, force: true });
  await build({
    entryPoints: files,
    outdir: out,
    outbase: SRC,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'error',
  });
  writeFileSync(join(out, '.stamp'), print);
  rmSync(DIST, { recursive: true, force: true });
  renameSync(out, DIST);
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

/** Builds dist/ unless it already matches src/ (or there is no src/: an image that ships dist/ only). Returns whether it built. */
export async function ensureBuilt() {
  if (!existsSync(SRC)) return false;
  if (isFresh(fingerprint(sources()))) return false;
  return withLock(async () => {
    const files = sources();
    const print = fingerprint(files);
    if (isFresh(print)) return false; // another process built it while we waited
    await compile(files, print);
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
export async function ensureWebBuilt() {
  if (!existsSync(join(WEB, 'vite.config.ts'))) return false;
  if (isFresh(fingerprint(webSources(), WEB), WEB_STAMP)) return false;
  return withLock(async () => {
    const print = fingerprint(webSources(), WEB);
    if (isFresh(print, WEB_STAMP)) return false;
    const { build } = await import('vite');
    const out = `${WEB_DIST}.tmp-${process.pid}`;
    await build({ configFile: join(WEB, 'vite.config.ts'), build: { outDir: out, emptyOutDir: true } });
    writeFileSync(join(out, '.stamp'), print);
    rmSync(WEB_DIST, { recursive: true, force: true });
    renameSync(out, WEB_DIST);
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
