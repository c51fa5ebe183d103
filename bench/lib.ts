import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon against a URL for a fixed time; loopback only, bounded. */
export async function load(url: string, options: { connections?: number; seconds?: number; method?: string; headers?: Record<string, string>; body?: string; setupRequest?: autocannon.Options['setupClient'] } = {}): Promise<LoadResult> {
  const result = await autocannon({
    url,
    connections: options.connections ?? 50,
    duration: options.seconds ?? 10,
    method: (options.method ?? 'GET') as autocannon.Request['method'],
    headers: options.headers,
    body: options.body,
    setupClient: options.setupRequest,
  });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/**
 * Starts a child process and resolves with the first line matching `ready` on `readyOn` (the other stream is
 * passed through): `tollgate serve` prints its banner on stderr, stdout being its JSON log.
 */
export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp, readyOn: 'stdout' | 'stderr' = 'stdout'): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: readyOn === 'stdout' ? ['ignore', 'pipe', 'inherit'] : ['ignore', 'inherit', 'pipe'] });
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`${command} did not become ready`)), 120_000);
    child[readyOn]!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = buffer.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match });
      }
    });
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}`)));
  });
}

/** Stops a child we started, by its PID, and waits for it to go. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export const machine = () => `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;

/** Runs statements on the PostgreSQL server itself (create, drop, show), one connection each. */
export const pgAdmin = (serverUrl: string) => async (statement: string) => {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await client.query(statement);
  } finally {
    await client.end();
  }
};

/** The URL of another database on the same server. */
export const databaseUrl = (serverUrl: string, name: string) => Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();

/** The median of the values (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The repository this bench runs from. */
export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();

/**
 * Each commit checked out as a detached git worktree under the temp dir (sharing this checkout's
 * node_modules), for benchmarks that compare commits side by side; `remove` takes them away again
 * (unless BENCH_KEEP_TREES is set).
 */
export function commitTrees(commits: readonly string[]): { trees: Array<{ name: string; sha: string; dir: string }>; remove: () => void } {
  const trees = commits.map((name) => {
    const sha = git('rev-parse', '--short', name);
    const dir = path.join(os.tmpdir(), `tollgate-bench-tree-${sha}`);
    if (!fs.existsSync(dir)) {
      git('worktree', 'add', '--detach', dir, sha);
      fs.symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'));
    }
    return { name, sha, dir };
  });
  return { trees, remove: () => void (process.env.BENCH_KEEP_TREES || trees.forEach((t) => git('worktree', 'remove', '--force', t.dir))) };
}

/**
 * Runs one round of `script` (a path inside this repo) in `tree` (a commitTrees() checkout, so the round imports
 * that commit's code) and resolves with the line it prints that starts with `{"tree"`: its results as JSON.
 */
export function runTreeRound(script: string, tree: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(repo, script)], { cwd: tree, env: { ...process.env, BENCH_TREE: tree }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.once('exit', (code) => {
      const line = out.trim().split('\n').find((l) => l.startsWith('{"tree"'));
      if (code === 0 && line) resolve(line);
      else reject(new Error(`${script} in ${tree} exited ${code}: ${out}`));
    });
  });
}

/**
 * The environment of a facilitator under load in a bench: its data in `dataDir`, every port chosen by the OS, and the
 * per-client, per-payer and per-payTo limits lifted (one load-generating client and a few payers; they still count).
 */
export const facilitatorBenchEnv = (dataDir: string): Record<string, string> => ({
  TOLLGATE_DATA_DIR: dataDir,
  API_PORT: '0',
  FACILITATOR_PORT: '0',
  DEVCHAIN_PORT: '0',
  LOG_LEVEL: 'warn',
  FACILITATOR_SETTLE_LIMIT_PER_CLIENT: '1000000000',
  FACILITATOR_VERIFY_LIMIT_PER_CLIENT: '1000000000',
  FACILITATOR_SETTLE_LIMIT_PER_PAYER: '1000000000',
  FACILITATOR_SETTLE_LIMIT_PER_PAY_TO: '1000000000',
});

/** CPU seconds (user + system) process `pid` has used so far, from Linux /proc; null where it cannot be read. */
export function cpuSeconds(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ ticks (100 a second)
  } catch {
    return null;
  }
}
