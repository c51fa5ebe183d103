// GET /health of Tollgate's api origin beside a bare Fastify hello-world, same machine, same run.
// Target: Tollgate ≥ 80 % of the bare figure. Run: npx tsx bench/health/run.ts
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, machine, startProcess, stopProcess } from '../lib.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

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
  // Warm both up (JIT, connection setup), then measure alternately.
  await load(tollgateUrl, { seconds: 2, connections });
  await load(bareUrl, { seconds: 2, connections });
  // Alternate rounds so background noise on the machine hits both sides alike; report the median.
  const ratios: number[] = [];
  console.log(`machine: ${machine()}; ${connections} connections, ${seconds} s per side per round, ${rounds} rounds`);
  for (let round = 1; round <= rounds; round += 1) {
    const bareResult = await load(bareUrl, { seconds, connections });
    const tollgateResult = await load(tollgateUrl, { seconds, connections });
    ratios.push(tollgateResult.requestsPerSecond / bareResult.requestsPerSecond);
    for (const [name, r] of [['bare Fastify hello-world', bareResult], ['Tollgate GET /health', tollgateResult]] as const) {
      console.log(`round ${round} ${name.padEnd(26)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms} ms  p99 ${r.p99Ms} ms  errors ${r.errors}  non-2xx ${r.non2xx}`);
    }
  }
  const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)];
  console.log(`median ratio: ${(median * 100).toFixed(1)} % of bare (target ≥ 80 %) ${median >= 0.8 ? 'PASS' : 'MISS'}`);
} finally {
  await stopProcess(tollgate.child);
  await stopProcess(bare.child);
  fs.rmSync(dataDir, { recursive: true, force: true });
}
