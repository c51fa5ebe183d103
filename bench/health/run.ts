// GET /health of Tollgate's api origin beside a bare Fastify hello-world, same machine, same run.
// Target: Tollgate ≥ 85 % of the bare figure (issue 46). Run: npx tsx bench/health/run.ts
// BENCH_BEFORE=<another checkout, built> adds that tree's Tollgate to every round (before/after in one run).
// Besides req/s it reports each server's CPU time per request (from /proc): on a shared machine the
// req/s ratio follows whoever else is running, the CPU cost of a request much less so.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, load, machine, startProcess, stopProcess } from '../lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const TARGET = 0.85;
const loadavg = () => {
  try {
    return fs.readFileSync('/proc/loadavg', 'utf8').trim();
  } catch {
    return os.loadavg().map((value) => value.toFixed(2)).join(' ');
  }
};

/** One side of a round: the load, and the server's CPU microseconds per request it answered. */
async function measure(url: string, pid: number | undefined) {
  const before = cpuSeconds(pid);
  const result = await load(url, { seconds, connections });
  const after = cpuSeconds(pid);
  const requests = result.requestsPerSecond * seconds;
  return { ...result, cpuUs: before === null || after === null ? null : ((after - before) * 1e6) / requests };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Starts one tree's `tollgate serve --roles api` on a fresh data directory (PGlite in memory, no DATABASE_URL). */
async function startTollgate(tree: string) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-health-'));
  const started = await startProcess(
    process.execPath,
    [path.join(tree, 'bin/tollgate.js'), 'serve', '--roles', 'api'],
    { ...process.env, TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
    /^api\s+(http:\/\/\S+)$/m,
    'stderr',
  );
  return { ...started, dataDir, origin: started.match[1]! };
}

const tollgate = await startTollgate(root);
const before = process.env.BENCH_BEFORE ? await startTollgate(path.resolve(process.env.BENCH_BEFORE)) : null;
const bare = await startProcess(process.execPath, [path.join(root, 'bench/health/bare-server.mjs')], process.env, /listening (http:\/\/\S+)/);

try {
  const bareUrl = `${bare.match[1]}/health`;
  const sides = [
    { name: 'Tollgate GET /health', url: `${tollgate.origin}/health`, pid: tollgate.child.pid, ratios: [] as number[], cpuRatios: [] as number[] },
    ...(before ? [{ name: 'before: GET /health', url: `${before.origin}/health`, pid: before.child.pid, ratios: [] as number[], cpuRatios: [] as number[] }] : []),
  ];
  // As in production, one request to another route first: a tree whose request context was an AsyncLocalStorage
  // (before 46-2) then pays its async hooks process-wide, /health too.
  for (const server of [tollgate, before]) if (server) await fetch(`${server.origin}/ready`);
  // Warm all up (JIT, connection setup), then measure alternately.
  for (const side of sides) await load(side.url, { seconds: 2, connections });
  await load(bareUrl, { seconds: 2, connections });
  // Alternate rounds so background noise on the machine hits every side alike; report the median.
  console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s per side per round, ${rounds} rounds`);
  for (let round = 1; round <= rounds; round += 1) {
    const bareResult = await measure(bareUrl, bare.child.pid);
    console.log(`round ${round} ${'bare Fastify hello-world'.padEnd(26)} ${line(bareResult)}  (/proc/loadavg ${loadavg()})`);
    // The Tollgate sides in turn, first one then the other.
    for (const side of round % 2 === 1 ? sides : [...sides].reverse()) {
      const result = await measure(side.url, side.pid);
      side.ratios.push(result.requestsPerSecond / bareResult.requestsPerSecond);
      if (bareResult.cpuUs !== null && result.cpuUs !== null) side.cpuRatios.push(bareResult.cpuUs / result.cpuUs);
      console.log(`round ${round} ${side.name.padEnd(26)} ${line(result)}  (/proc/loadavg ${loadavg()})`);
    }
  }
  const spread = (values: number[]) => `${(Math.min(...values) * 100).toFixed(1)}–${(Math.max(...values) * 100).toFixed(1)} %`;
  for (const side of sides) {
    const ratio = median(side.ratios);
    console.log(`${side.name}: median ratio ${(ratio * 100).toFixed(1)} % of bare (rounds ${spread(side.ratios)}; target ≥ ${TARGET * 100} %) ${ratio >= TARGET ? 'PASS' : 'MISS'}`);
    if (side.cpuRatios.length > 0) console.log(`${side.name}: CPU per request, bare ÷ Tollgate: median ${(median(side.cpuRatios) * 100).toFixed(1)} % (rounds ${spread(side.cpuRatios)})`);
  }
  console.log(`/proc/loadavg at the end: ${loadavg()}`);
} finally {
  for (const server of [tollgate, before]) {
    if (!server) continue;
    await stopProcess(server.child);
    fs.rmSync(server.dataDir, { recursive: true, force: true });
  }
  await stopProcess(bare.child);
}

function line(r: Awaited<ReturnType<typeof measure>>): string {
  const cpu = r.cpuUs === null ? '' : `  cpu ${r.cpuUs.toFixed(1)} µs/req`;
  return `${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  errors ${r.errors}  non-2xx ${r.non2xx}${cpu}`;
}
