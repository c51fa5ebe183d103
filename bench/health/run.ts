// GET /health of Tollgate's api origin beside a bare Fastify hello-world, same machine, same run.
// Target: Tollgate ≥ 80 % of the bare figure. Run: npx tsx bench/health/run.ts
// Besides req/s it reports each server's CPU time per request (from /proc): on a shared machine the
// req/s ratio follows whoever else is running, the CPU cost of a request much less so.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, machine, startProcess, stopProcess } from '../lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);

/** CPU seconds (user + system) a process has used so far; null where there is no /proc. */
function cpuSeconds(pid: number | undefined): number | null {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in USER_HZ ticks
  } catch {
    return null;
  }
}

/** One side of a round: the load, and the server's CPU microseconds per request it answered. */
async function measure(url: string, pid: number | undefined) {
  const before = cpuSeconds(pid);
  const result = await load(url, { seconds, connections });
  const after = cpuSeconds(pid);
  const requests = result.requestsPerSecond * seconds;
  return { ...result, cpuUs: before === null || after === null ? null : ((after - before) * 1e6) / requests };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-bench-health-'));
const tollgate = await startProcess(
  process.execPath,
  [path.join(root, 'bin/tollgate.js'), 'serve', '--roles', 'api'],
  { ...process.env, TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '' },
  /^api\s+(http:\/\/\S+)$/m,
);
const bare = await startProcess(process.execPath, [path.join(root, 'bench/health/bare-server.mjs')], process.env, /listening (http:\/\/\S+)/);

try {
  const tollgateUrl = `${tollgate.match[1]}/health`;
  const bareUrl = `${bare.match[1]}/health`;
  // As in production after any real request, the request scope (AsyncLocalStorage, src/platform/request-context.ts)
  // is on process-wide, whether or not /health itself runs in it: one request to a route that does.
  await fetch(`${tollgate.match[1]}/ready`);
  // Warm both up (JIT, connection setup), then measure alternately.
  await load(tollgateUrl, { seconds: 2, connections });
  await load(bareUrl, { seconds: 2, connections });
  // Alternate rounds so background noise on the machine hits both sides alike; report the median.
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s per side per round, ${rounds} rounds`);
  for (let round = 1; round <= rounds; round += 1) {
    const loadAverage = os.loadavg()[0]!.toFixed(1);
    const bareResult = await measure(bareUrl, bare.child.pid);
    const tollgateResult = await measure(tollgateUrl, tollgate.child.pid);
    ratios.push(tollgateResult.requestsPerSecond / bareResult.requestsPerSecond);
    if (bareResult.cpuUs !== null && tollgateResult.cpuUs !== null) cpuRatios.push(bareResult.cpuUs / tollgateResult.cpuUs);
    for (const [name, r] of [['bare Fastify hello-world', bareResult], ['Tollgate GET /health', tollgateResult]] as const) {
      const cpu = r.cpuUs === null ? '' : `  cpu ${r.cpuUs.toFixed(1)} µs/req`;
      console.log(`round ${round} ${name.padEnd(26)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  errors ${r.errors}  non-2xx ${r.non2xx}${cpu}  (load ${loadAverage})`);
    }
  }
  const spread = (values: number[]) => `${(Math.min(...values) * 100).toFixed(1)}–${(Math.max(...values) * 100).toFixed(1)} %`;
  const ratio = median(ratios);
  console.log(`median ratio: ${(ratio * 100).toFixed(1)} % of bare (rounds ${spread(ratios)}; target ≥ 80 %) ${ratio >= 0.8 ? 'PASS' : 'MISS'}`);
  if (cpuRatios.length > 0) {
    console.log(`CPU per request, bare ÷ Tollgate: median ${(median(cpuRatios) * 100).toFixed(1)} % (rounds ${spread(cpuRatios)}); load average now ${os.loadavg()[0]!.toFixed(1)}`);
  }
} finally {
  await stopProcess(tollgate.child);
  await stopProcess(bare.child);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
