// CPU per batched request of the queue bench's Tollgate path, by phase: the server process's, its
// PostgreSQL backends' and this client's (utime + stime from /proc, Linux only), and the machine's idle
// share, beside each phase's rate. Wall-clock rates on a shared machine swing with its load; CPU time per
// request barely does, so it is what to compare when changing the batched path (bench/queue/run.ts stays the
// throughput comparison).
// Run: npx tsx bench/queue/cpu.ts. Knobs: PG_URL (postgres://postgres@127.0.0.1:5432/test; a fresh database
// is created and dropped), N (10000 events per round), ROUNDS (4); 8 publishers then 8 consumers, batches of 100.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { cpuSeconds, databaseUrl, pgAdmin, startProcess, stopProcess } from '../lib.js';
import { client } from './client.js';

const serverUrl = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const events = Number(process.env.N ?? 10_000);
const rounds = Number(process.env.ROUNDS ?? 4);
const [concurrency, batch] = [8, 100];

const database = `tollgate_cpu_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
await admin(`create database ${database}`);
const started = await startProcess(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'server.ts')], { ...process.env, BENCH_DATABASE_URL: databaseUrl(serverUrl, database) }, /^BENCH_READY (.+)$/m);
const post = client(JSON.parse(started.match[1]!));

/** The machine's idle and total CPU ticks so far (/proc/stat: idle + iowait, and all). */
function machineTicks() {
  const ticks = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: ticks[3]! + ticks[4]!, all: ticks.reduce((sum, n) => sum + n, 0) };
}

/**
 * CPU seconds used so far by the server, by the bench database's PostgreSQL backends and by this client, the
 * machine's ticks, and the wall clock (ms).
 */
async function sample() {
  const backends = (await admin(`select pid from pg_stat_activity where datname = '${database}'`)).rows as Array<{ pid: number }>;
  const own = process.cpuUsage();
  return {
    server: cpuSeconds(started.child.pid) ?? 0,
    pg: backends.reduce((sum, b) => sum + (cpuSeconds(b.pid) ?? 0), 0),
    client: (own.user + own.system) / 1e6,
    machine: machineTicks(),
    ms: performance.now(),
  };
}

const phase = (name: string, requests: number, from: Awaited<ReturnType<typeof sample>>, to: Awaited<ReturnType<typeof sample>>) => {
  const perRequest = (key: 'server' | 'pg' | 'client') => (((to[key] - from[key]) * 1e6) / requests).toFixed(0);
  const idle = ((to.machine.idle - from.machine.idle) / (to.machine.all - from.machine.all)) * 100;
  return `${name} ${requests} req: server ${perRequest('server')} µs/req, pg ${perRequest('pg')} µs/req, client ${perRequest('client')} µs/req, machine idle ${idle.toFixed(0)} %, ${((events / (to.ms - from.ms)) * 1000).toFixed(0)}/s`;
};

/** `concurrency` workers running `work` until it answers false. */
const workers = (work: () => Promise<boolean>) => Promise.all(Array.from({ length: concurrency }, async () => { while (await work()); }));

try {
  for (let round = 0; round < rounds; round++) {
    const queueId = (await post('/v1/event-queues', { name: `q${round}`, defaultLeaseSeconds: 60, maxAttempts: 5 })).id as string;
    const start = await sample();
    let [published, publishRequests] = [0, 0];
    await workers(async () => {
      if (published >= events) return false;
      const from = published;
      published += batch;
      publishRequests += 1;
      await post(`/v1/event-queues/${queueId}/events/batch`, { events: Array.from({ length: batch }, (_, i) => ({ payload: { n: from + i, at: Date.now() } })) });
      return true;
    });
    const publishedAt = await sample();
    // As run.ts's batched consumer: a claim to start, then each ack-and-claim acks a batch and claims the next.
    let [acked, drainRequests] = [0, 0];
    await workers(async () => {
      if (acked >= events) return false;
      type Leases = { event: { id: string }; leaseToken: string }[];
      let claimed = (await post(`/v1/event-queues/${queueId}/claim`, { maxEvents: batch })) as Leases;
      drainRequests += 1;
      while (claimed.length) {
        const answer = (await post(`/v1/event-queues/${queueId}/ack-and-claim`, { leases: claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken })), maxEvents: batch })) as { acked: unknown[]; claimed: Leases };
        drainRequests += 1;
        acked += answer.acked.length;
        claimed = answer.claimed;
      }
      return true;
    });
    const drained = await sample();
    console.log(`round ${round}: ${phase('publish', publishRequests, start, publishedAt)} | ${phase('drain', drainRequests, publishedAt, drained)}`);
  }
} finally {
  await stopProcess(started.child);
  await admin(`drop database if exists ${database} with (force)`);
}
