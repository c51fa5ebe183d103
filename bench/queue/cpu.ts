// CPU per batched request of the queue bench's Tollgate path, by phase: the server process's and its
// PostgreSQL backends' (utime + stime from /proc, Linux only), beside each phase's rate. Wall-clock rates
// on a shared machine swing with its load; CPU time per request barely does, so it is what to compare
// when changing the batched path (bench/queue/run.ts stays the throughput comparison).
// Run: npx tsx bench/queue/cpu.ts. Knobs: PG_URL (postgres://postgres@127.0.0.1:5432/test; a fresh database
// is created and dropped), N (10000 events per round), ROUNDS (4); 8 publishers then 8 consumers, batches of 100.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { databaseUrl, pgAdmin, startProcess, stopProcess } from '../lib.js';
const serverUrl = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const database = `tollgate_cpu_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
await admin(`create database ${database}`);
const dbUrl = databaseUrl(serverUrl, database);
const hz = 100; // USER_HZ: the unit of /proc/<pid>/stat times on Linux
const cpuOf = (pid: number) => { try { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop()!.trim().split(/\s+/); return (Number(f[11]) + Number(f[12])) / hz; } catch { return 0; } };
const backends = async () => (await admin(`select pid from pg_stat_activity where datname = '${database}'`)).rows.map((r: any) => r.pid as number);
const pgCpu = async () => (await backends()).reduce((s, pid) => s + cpuOf(pid), 0);
const started = await startProcess(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'server.ts')], { ...process.env, BENCH_DATABASE_URL: dbUrl }, /^BENCH_READY (.+)$/m);
const ready = JSON.parse(started.match[1]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const base = new URL(ready.api);
const post = (url: string, body: unknown) => new Promise<any>((resolve, reject) => {
  const payload = JSON.stringify(body);
  const req = http.request({ agent, host: base.hostname, port: base.port, path: url, method: 'POST', headers: { authorization: `Bearer ${ready.apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (res) => {
    const chunks: Buffer[] = []; res.on('data', (c) => chunks.push(c)); res.on('end', () => { const j = JSON.parse(Buffer.concat(chunks).toString()); if (j.code !== 0) reject(new Error(JSON.stringify(j))); else resolve(j.data); });
  });
  req.on('error', reject); req.end(payload);
});
const N = Number(process.env.N ?? 10000), C = 8, B = 100;
try {
  for (let round = 0; round < Number(process.env.ROUNDS ?? 4); round++) {
    const queueId = (await post('/v1/event-queues', { name: `q${round}`, defaultLeaseSeconds: 60, maxAttempts: 5 })).id;
    const s0 = cpuOf(started.child.pid!), p0 = await pgCpu(), w0 = performance.now();
    let next = 0, requests = 0;
    await Promise.all(Array.from({ length: C }, async () => { while (next < N) { const from = next; next += B; requests++; await post(`/v1/event-queues/${queueId}/events/batch`, { events: Array.from({ length: B }, (_, i) => ({ payload: { n: from + i, at: Date.now() } })) }); } }));
    const s1 = cpuOf(started.child.pid!), p1 = await pgCpu(), w1 = performance.now();
    let acked = 0, drainRequests = 0;
    await Promise.all(Array.from({ length: C }, async () => {
      while (acked < N) {
        let claimed = await post(`/v1/event-queues/${queueId}/claim`, { maxEvents: B }); drainRequests++;
        while (claimed.length) { const a = await post(`/v1/event-queues/${queueId}/ack-and-claim`, { leases: claimed.map((c: any) => ({ eventId: c.event.id, leaseToken: c.leaseToken })), maxEvents: B }); drainRequests++; acked += a.acked.length; claimed = a.claimed; }
      }
    }));
    const s2 = cpuOf(started.child.pid!), p2 = await pgCpu(), w2 = performance.now();
    console.log(`round ${round}: publish ${requests} req: server ${((s1 - s0) * 1e6 / requests).toFixed(0)} µs/req, pg ${((p1 - p0) * 1e6 / requests).toFixed(0)} µs/req, ${(N / (w1 - w0) * 1000).toFixed(0)}/s | drain ${drainRequests} req: server ${((s2 - s1) * 1e6 / drainRequests).toFixed(0)} µs/req, pg ${((p2 - p1) * 1e6 / drainRequests).toFixed(0)} µs/req, ${(N / (w2 - w1) * 1000).toFixed(0)}/s`);
  }
} finally {
  await stopProcess(started.child);
  await admin(`drop database if exists ${database} with (force)`);
}
