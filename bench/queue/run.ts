// Queue throughput on PostgreSQL: publish, then claim + ack with 8 concurrent consumers, over HTTP
// against the service (real listener, keep-alive), beside pg-boss doing the same work (send, then
// fetch + complete with 8 concurrent workers) on the same database server in the same run.
// Target: Tollgate ≥ 1.5 × pg-boss (events fully processed per second). Run: npx tsx bench/queue/run.ts
//   BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/test): the server where a fresh database
//   is created for the run and dropped after it. BENCH_EVENTS (per round, default 5000),
//   BENCH_ROUNDS (default 3), BENCH_CONCURRENCY (publishers = consumers, default 8),
//   BENCH_OUT (default bench/queue/results.md) tune it. Every round is bounded by BENCH_ROUND_TIMEOUT_S.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import PgBoss from 'pg-boss';
import { machine, startProcess, stopProcess, databaseUrl, pgAdmin } from '../lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const serverUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const eventsPerRound = Number(process.env.BENCH_EVENTS ?? 5000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const roundTimeoutMs = Number(process.env.BENCH_ROUND_TIMEOUT_S ?? 300) * 1000;
const out = process.env.BENCH_OUT ?? path.join(here, 'results.md');
const TARGET = 1.5;

interface Phases {
  publishMs: number;
  consumeMs: number;
}
/** One system under test: publish `count` events, then consume them all, each phase `concurrency` wide. */
interface Contender {
  name: string;
  prepare(round: string): Promise<void>;
  publish(n: number): Promise<void>;
  /** Claims (or fetches) and acks (or completes) one event; false when none was there. */
  consumeOne(): Promise<boolean>;
}

const database = `tollgate_bench_queue_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
const pgVersion = (await admin('show server_version')).rows[0].server_version as string;
const syncCommit = (await admin('show synchronous_commit')).rows[0].synchronous_commit as string;
await admin(`create database ${database}`);
const dbUrl = databaseUrl(serverUrl, database);

async function runPhase(label: string, work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label} exceeded ${roundTimeoutMs} ms`)), roundTimeoutMs)));
  try {
    await Promise.race([work(), timeout]);
  } finally {
    clearTimeout(timer);
  }
  return performance.now() - started;
}

async function measure(contender: Contender, round: string, count: number): Promise<Phases> {
  await contender.prepare(round);
  let next = 0;
  const publishMs = await runPhase('publish', async () => {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await contender.publish(next++);
      }),
    );
  });
  let consumed = 0;
  const consumeMs = await runPhase('consume', async () => {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (consumed < count) {
          if (await contender.consumeOne()) consumed += 1;
        }
      }),
    );
  });
  if (consumed !== count) throw new Error(`${contender.name}: consumed ${consumed} of ${count}`);
  return { publishMs, consumeMs };
}

/** Tollgate over HTTP: node:http with a keep-alive agent (a lighter client than fetch) against the server process. */
function tollgate(name: string, ready: { api: string; apiKey: string }): Contender {
  let queueId = '';
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const base = new URL(ready.api);
  const post = (url: string, body: unknown) =>
    new Promise<any>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const request = http.request(
        {
          agent,
          host: base.hostname,
          port: base.port,
          path: url,
          method: 'POST',
          headers: { authorization: `Bearer ${ready.apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const json = JSON.parse(Buffer.concat(chunks).toString()) as { code: number; data: any };
            if ((response.statusCode ?? 500) >= 300 || json.code !== 0) reject(new Error(`${url}: ${response.statusCode} ${JSON.stringify(json)}`));
            else resolve(json.data);
          });
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  return {
    name,
    async prepare(round) {
      queueId = (await post('/v1/event-queues', { name: `bench-${round}`, defaultLeaseSeconds: 60, maxAttempts: 5 })).id;
    },
    async publish(n) {
      await post(`/v1/event-queues/${queueId}/events`, { payload: { n, at: Date.now() } });
    },
    async consumeOne() {
      // The queue is full when consumers start: no long poll, like pg-boss's fetch.
      const claimed = await post(`/v1/event-queues/${queueId}/claim`, { waitSeconds: 0 });
      if (!claimed) return false;
      await post(`/v1/events/${claimed.event.id}/ack`, { leaseToken: claimed.leaseToken });
      return true;
    },
  };
}

/** pg-boss 10 in this process, same pool size as the service (10), on the same database server. */
function pgBoss(boss: PgBoss): Contender {
  let queue = '';
  return {
    name: 'pg-boss 10',
    async prepare(round) {
      queue = `bench_${round.replace(/\W/g, '_')}`;
      await boss.createQueue(queue);
    },
    async publish(n) {
      await boss.send(queue, { n, at: Date.now() });
    },
    async consumeOne() {
      const [job] = await boss.fetch<{ n: number }>(queue);
      if (!job) return false;
      await boss.complete(queue, job.id);
      return true;
    },
  };
}

const rate = (count: number, ms: number) => (count * 1000) / ms;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const servers: Array<Awaited<ReturnType<typeof startProcess>>> = [];
let boss: PgBoss | null = null;
try {
  const start = async (asyncLeases: boolean) => {
    const started = await startProcess(
      process.execPath,
      ['--import', 'tsx', path.join(here, 'server.ts')],
      { ...process.env, BENCH_DATABASE_URL: dbUrl, BENCH_ASYNC_LEASES: asyncLeases ? '1' : '0' },
      /^BENCH_READY (.+)$/m,
    );
    servers.push(started);
    return JSON.parse(started.match[1]) as { api: string; apiKey: string };
  };
  const contenders: Contender[] = [tollgate('Tollgate (HTTP, default durable commits)', await start(false)), tollgate('Tollgate, opt-in async lease commits (HTTP)', await start(true))];
  boss = new PgBoss({ connectionString: dbUrl, max: 10 });
  boss.on('error', (error) => console.error('pg-boss error', error));
  await boss.start();
  contenders.push(pgBoss(boss));

  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.log(line);
  };
  for (const contender of contenders) await measure(contender, `warmup-${contenders.indexOf(contender)}`, 500);

  const results = new Map<string, Array<Phases & { total: number }>>();
  for (let round = 1; round <= rounds; round += 1) {
    // Alternate who goes first, so a busy machine hurts everyone alike.
    const order = round % 2 === 1 ? contenders : [...contenders].reverse();
    for (const contender of order) {
      const phases = await measure(contender, `r${round}-${contenders.indexOf(contender)}`, eventsPerRound);
      const total = rate(eventsPerRound, phases.publishMs + phases.consumeMs);
      results.set(contender.name, [...(results.get(contender.name) ?? []), { ...phases, total }]);
      log(
        `round ${round} ${contender.name}: ${fmt(total)} events/s end to end  (publish ${fmt(rate(eventsPerRound, phases.publishMs))}/s, claim+ack ${fmt(rate(eventsPerRound, phases.consumeMs))}/s)`,
      );
    }
  }

  const rows = contenders.map((c) => {
    const runs = results.get(c.name)!;
    return {
      name: c.name,
      total: median(runs.map((r) => r.total)),
      publish: median(runs.map((r) => rate(eventsPerRound, r.publishMs))),
      consume: median(runs.map((r) => rate(eventsPerRound, r.consumeMs))),
      all: runs.map((r) => fmt(r.total)).join(' / '),
    };
  });
  const bossRow = rows.find((r) => r.name.startsWith('pg-boss'))!;
  const ratio = rows[0].total / bossRow.total;
  const table = [
    `Machine: ${machine()}; PostgreSQL ${pgVersion} on loopback (synchronous_commit=${syncCommit}); ${new Date().toISOString()}`,
    `Workload per round: ${eventsPerRound} events published by ${concurrency} concurrent publishers, then claimed and acked by ${concurrency} concurrent consumers; ${rounds} rounds, median shown.`,
    '',
    '| system | events/s end to end (median) | publish/s | claim+ack/s | rounds |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${fmt(r.total)} | ${fmt(r.publish)} | ${fmt(r.consume)} | ${r.all} |`),
    '',
    `Tollgate / pg-boss: ${ratio.toFixed(2)}× (target ≥ ${TARGET}×) — ${ratio >= TARGET ? 'PASS' : 'MISS'}; opt-in async lease commits: ${(rows[1].total / bossRow.total).toFixed(2)}×`,
  ];
  console.log(`\n${table.join('\n')}`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `# bench/queue results\n\n${table.join('\n')}\n\n## Rounds\n\n${lines.map((l) => `- ${l}`).join('\n')}\n`);
  console.log(`\nwritten to ${out}`);
} finally {
  await boss?.stop({ graceful: false, wait: true }).catch(() => {});
  for (const server of servers) await stopProcess(server.child).catch(() => {});
  await admin(`drop database if exists ${database} with (force)`).catch(() => {});
}
