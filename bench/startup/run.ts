// Start-up of the compiled build (bin/tollgate.js → dist/) beside the same sources run through tsx, as
// `npm start` did before the build. Targets: CLI commands ≤ 1 s; a restart on an existing data dir healthy
// (GET /ready answers 200) in ≤ 3 s. Run: npx tsx bench/startup/run.ts   (BENCH_ROUNDS, default 7)
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machine, startProcess, stopProcess } from '../lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const variants = {
  compiled: [path.join(root, 'bin/tollgate.js')],
  tsx: ['--import', 'tsx', path.join(root, 'src/main.ts')],
} as const;
type Variant = keyof typeof variants;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-startup-'));
const env = { ...process.env, TOLLGATE_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' };

function timeCommand(variant: Variant, args: string[], extraEnv: NodeJS.ProcessEnv = {}): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, [...variants[variant], ...args], { cwd: root, env: { ...env, ...extraEnv }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${variant} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return performance.now() - started;
}

/**
 * As right after a clone: no dist/ yet (compiled, which builds first), or an empty tsx cache (tsx keeps it
 * under TMPDIR, so a fresh TMPDIR is a cold cache).
 */
async function asAfterClone<T>(variant: Variant, run: (extraEnv: NodeJS.ProcessEnv) => T | Promise<T>): Promise<T> {
  if (variant === 'compiled') {
    fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true });
    return run({});
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-tsx-cache-'));
  try {
    return await run({ TMPDIR: tmp });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Spawn → the api origin's GET /ready answers 200, then a clean stop. */
async function timeRestart(variant: Variant, extraEnv: NodeJS.ProcessEnv = {}): Promise<number> {
  const started = performance.now();
  const { child, match } = await startProcess(process.execPath, [...variants[variant], 'serve'], { ...env, ...extraEnv }, /^api\s+(http:\/\/\S+)$/m, 'stderr');
  try {
    for (;;) {
      const response = await fetch(`${match[1]}/ready`).catch(() => null);
      if (response?.status === 200) return performance.now() - started;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  } finally {
    await stopProcess(child);
  }
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted.at(-1)! };
};
const show = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`);

// The first start creates and migrates the data dir; every timed start after it is a restart.
spawnSync(process.execPath, [path.join(root, 'bin/build.js')], { stdio: 'inherit' });
await timeRestart('compiled');

const figures: Record<string, Record<Variant, number[]>> = {};
const record = (name: string, variant: Variant, ms: number) => {
  figures[name] ??= { compiled: [], tsx: [] };
  figures[name][variant].push(ms);
};

console.log(`machine: ${machine()}; ${rounds} rounds, compiled and tsx alternating`);
try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const variant of (round % 2 ? ['compiled', 'tsx'] : ['tsx', 'compiled']) as Variant[]) {
      record('first --help after a clone', variant, await asAfterClone(variant, (extra) => timeCommand(variant, ['--help'], extra)));
      record('first start after a clone → /ready 200', variant, await asAfterClone(variant, (extra) => timeRestart(variant, extra)));
      record('tollgate --help', variant, timeCommand(variant, ['--help']));
      record('tollgate migrate (no instance)', variant, timeCommand(variant, ['migrate']));
      record('restart → /ready 200', variant, await timeRestart(variant));
    }
    // A command answered by a running instance through its admin socket.
    const { child } = await startProcess(process.execPath, [...variants.compiled, 'serve'], env, /^api\s+http/m, 'stderr');
    try {
      for (const variant of ['compiled', 'tsx'] as Variant[]) record('tollgate status (running)', variant, timeCommand(variant, ['status']));
      for (const variant of ['compiled', 'tsx'] as Variant[]) record('tollgate mgmt-credential create (running)', variant, timeCommand(variant, ['mgmt-credential', 'create', '--name', `bench-${round}-${variant}`]));
    } finally {
      await stopProcess(child);
    }
  }
  console.log(`${'figure'.padEnd(42)} ${'compiled median (min–max)'.padEnd(30)} ${'tsx median (min–max)'.padEnd(30)} target`);
  for (const [name, byVariant] of Object.entries(figures)) {
    const [compiled, tsx] = [stats(byVariant.compiled), stats(byVariant.tsx)];
    // The targets: CLI commands ≤ 1 s, a restart healthy ≤ 3 s; the first start after a clone has none.
    const target = name.startsWith('restart') ? 3000 : name.startsWith('first start') ? null : 1000;
    const cell = (s: ReturnType<typeof stats>) => `${show(s.median)} (${show(s.min)}–${show(s.max)})`.padEnd(30);
    const verdict = target === null ? '—' : `≤ ${show(target)} ${compiled.median <= target ? 'PASS' : 'MISS'}`;
    console.log(`${name.padEnd(42)} ${cell(compiled)} ${cell(tsx)} ${verdict}`);
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}

