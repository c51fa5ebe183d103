// Queue throughput on PostgreSQL, same server, same run: publish N events, then claim + ack them all,
// each phase C wide. Contenders:
//   - Tollgate over HTTP (a real server process, keep-alive node:http client), single-event calls (each ack
//     claims the next event in the same request: one request per event) and batches (publish 100 per
//     request; claim maxEvents 100 to start, then each ack-and-claim acks a batch and claims the next);
//   - pg-boss 12 and graphile-worker 0.18, in their own process driving the library directly
//     (bench/queue/competitors, installed on demand: both declare Node >= 22 but run on Node 20),
//     with their single-job APIs and their batch APIs (pg-boss insert/fetch batchSize/complete ids;
//     graphile-worker addJobs + its local queue and batched completions);
//   - diagnostics: Tollgate's events services called in this process (no HTTP), the single-event path's
//     statements alone and the batched path's (batch publish, ack-and-claim), to tell the queue's own cost
//     from the HTTP round trips'. bench/queue/cpu.ts gives the batched path's CPU per request by phase.
// Targets: batched ≥ 1.0× graphile-worker (batched) and ≥ 5× our single-event path (issue 19); single
// ≥ 1.0× pg-boss (single) (issue 31; issue 19 asked 1.5×) and batched ≥ 1.0× pg-boss (batched) (issue 46), each as the
// median of per-round ratios over ≥ 5 rounds.
// Run: npx tsx bench/queue/run.ts. Knobs: BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test, a fresh
// database is created and dropped), BENCH_EVENTS (10000 per round), BENCH_ROUNDS (5), BENCH_CONCURRENCY (8),
// BENCH_BATCH (100), BENCH_ROUND_TIMEOUT_S (300), BENCH_OUT (bench/queue/results.md), BENCH_ONLY (name substrings separated by |:
// run only those contenders, to probe one), BENCH_PROFILE (a directory: the server writes a CPU profile there),
// BENCH_ASYNC_LEASES=1 (the server commits lease changes asynchronously, the opt-in of EventStoreOptions).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createEventsServices } from '../../src/modules/events/services.js';
import { systemClock } from '../../src/platform/clock.js';
import { openDatabase } from '../../src/platform/db.js';
import { SecretHasher } from '../../src/platform/secrets.js';
import { databaseUrl, machine, pgAdmin, startProcess, stopProcess } from '../lib.js';
import { client } from './client.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const serverUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const eventsPerRound = Number(process.env.BENCH_EVENTS ?? 10_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const batch = Number(process.env.BENCH_BATCH ?? 100);
const roundTimeoutMs = Number(process.env.BENCH_ROUND_TIMEOUT_S ?? 300) * 1000;
const out = process.env.BENCH_OUT ?? path.join(here, 'results.md');

interface Phases {
  publishMs: number;
  consumeMs: number;
}
/** One system under test: runs one round (publish `count`, then drain them) and says how long each phase took. */
interface Contender {
  name: string;
  round(id: string, count: number): Promise<Phases>;
}

const database = `tollgate_bench_queue_${randomBytes(4).toString('hex')}`;
const admin = pgAdmin(serverUrl);
const pgVersion = (await admin('show server_version')).rows[0].server_version as string;
const syncCommit = (await admin('show synchronous_commit')).rows[0].synchronous_commit as string;
await admin(`create database ${database}`);
const dbUrl = databaseUrl(serverUrl, database);

function withTimeout<T>(label: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${label} exceeded ${roundTimeoutMs} ms`)), roundTimeoutMs)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

async function timed(work: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** `concurrency` loops taking `step` units at a time until `total` are taken. */
async function spread(total: number, step: number, job: (from: number, n: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const from = next;
        next += step;
        await job(from, Math.min(step, total - from));
      }
    }),
  );
}

const payload = (n: number) => ({ n, at: Date.now() });

/** Tollgate over HTTP: one request per publish, claim and ack, or batches of `batch`. */
function tollgate(ready: { api: string; apiKey: string }, batched: boolean): Contender {
  const post = client(ready);
  return {
    name: batched ? `Tollgate HTTP, batches of ${batch}` : 'Tollgate HTTP, single-event calls',
    async round(id, count) {
      const queueId = (await post('/v1/event-queues', { name: `bench-${id}`, defaultLeaseSeconds: 60, maxAttempts: 5 })).id as string;
      const publishMs = await timed(() =>
        spread(count, batched ? batch : 1, async (from, n) => {
          if (batched) await post(`/v1/event-queues/${queueId}/events/batch`, { events: Array.from({ length: n }, (_, i) => ({ payload: payload(from + i) })) });
          else await post(`/v1/event-queues/${queueId}/events`, { payload: payload(from) });
        }),
      );
      let acked = 0;
      const consumeMs = await timed(async () => {
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            // The queue is full when consumers start: no long poll, like the others' fetch.
            while (acked < count) {
              if (batched) {
                // One request per batch: each batch ack claims the next batch (ack-and-claim), a claim only to start.
                type Leases = { event: { id: string }; leaseToken: string }[];
                let claimed = (await post(`/v1/event-queues/${queueId}/claim`, { maxEvents: batch })) as Leases;
                while (claimed.length) {
                  const leases = claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken }));
                  const answer = (await post(`/v1/event-queues/${queueId}/ack-and-claim`, { leases, maxEvents: batch })) as { acked: { ok: boolean }[]; claimed: Leases };
                  if (!answer.acked.every((r) => r.ok)) throw new Error('a batch ack was refused');
                  acked += answer.acked.length;
                  claimed = answer.claimed;
                }
              } else {
                // One request per event: each ack claims the next (ack-and-next), a claim only to start or restart.
                let claimed = await post(`/v1/event-queues/${queueId}/claim`, { waitSeconds: 0 });
                while (claimed) {
                  const answer = await post(`/v1/events/${claimed.event.id}/ack`, { leaseToken: claimed.leaseToken, next: { queueId } });
                  acked += 1;
                  claimed = answer.next;
                }
              }
            }
          }),
        );
      });
      if (acked !== count) throw new Error(`Tollgate acked ${acked} of ${count}`);
      return { publishMs, consumeMs };
    },
  };
}

/**
 * The events services of Tollgate called in this process, no HTTP: the same statements as the server's
 * single-event path (one per publish, claim, ack), to split the HTTP round trips' cost from the queue's own.
 * Diagnostic: not a way Tollgate is offered (its API is HTTP).
 */
async function tollgateInProcess(): Promise<Contender & { services: ReturnType<typeof createEventsServices>; close(): Promise<void> }> {
  const database = await openDatabase({ url: dbUrl, pgliteDir: null, poolSize: 10 });
  const services = createEventsServices({ database, clock: systemClock, hasher: new SecretHasher(randomBytes(32).toString('hex')), log: pino({ level: 'silent' }) });
  const { queues, events } = services;
  return {
    services,
    name: 'Tollgate events services in process, single-event calls (no HTTP; diagnostic)',
    async round(id, count) {
      const queue = await queues.create('bench-in-process', { name: `bench-${id}`, defaultLeaseSeconds: 60, maxAttempts: 5 });
      const publishMs = await timed(() => spread(count, 1, async (from) => void (await events.publish('bench-in-process', queue.id, { payload: payload(from) }))));
      let acked = 0;
      const consumeMs = await timed(() =>
        Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (acked < count) {
              const claimed = await events.claim('bench-in-process', queue.id);
              if (!claimed) continue;
              await events.ack('bench-in-process', claimed.event.id, claimed.leaseToken);
              acked += 1;
            }
          }),
        ).then(() => undefined),
      );
      return { publishMs, consumeMs };
    },
    async close() {
      services.waiters.close();
      services.notifier.close();
      await database.close();
    },
  };
}

/**
 * The batched path's services called in this process, no HTTP: batch publish, then a claim to start and
 * ack-and-claim to drain, as the HTTP consumer does. Diagnostic: what the batched statements cost without
 * the server hop, beside pg-boss's batch calls (which are also made from the caller's process).
 */
function tollgateInProcessBatches(services: ReturnType<typeof createEventsServices>): Contender {
  const { queues, batches } = services;
  const project = 'bench-in-process';
  return {
    name: `Tollgate events services in process, batches of ${batch} (no HTTP; diagnostic)`,
    async round(id, count) {
      const queue = await queues.create(project, { name: `bench-batches-${id}`, defaultLeaseSeconds: 60, maxAttempts: 5 });
      const publishMs = await timed(() =>
        spread(count, batch, async (from, n) => void (await batches.publishMany(project, queue.id, Array.from({ length: n }, (_, i) => ({ payload: payload(from + i) }))))),
      );
      let acked = 0;
      const consumeMs = await timed(() =>
        Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (acked < count) {
              let claimed = await batches.claimMany(project, queue.id, batch);
              while (claimed.length) {
                const leases = claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken }));
                const answer = await batches.ackAndClaim(project, queue.id, leases, batch);
                if (!answer.acked.every((r) => r.ok)) throw new Error('a batch ack was refused');
                acked += answer.acked.length;
                claimed = answer.claimed;
              }
            }
          }),
        ).then(() => undefined),
      );
      return { publishMs, consumeMs };
    },
  };
}

const competitorsDir = path.join(here, 'competitors');
function installCompetitors(): void {
  if (fs.existsSync(path.join(competitorsDir, 'node_modules', 'graphile-worker'))) return;
  console.log('installing bench/queue/competitors (pg-boss 12, graphile-worker 0.18)');
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', competitorsDir], { stdio: 'inherit' });
}

/** A competitor's round in its own process (bench/queue/competitors/run.mjs). */
function competitor(system: 'pg-boss' | 'graphile-worker', batched: boolean): Contender {
  const version = JSON.parse(fs.readFileSync(path.join(competitorsDir, 'node_modules', system, 'package.json'), 'utf8')).version as string;
  return {
    name: `${system} ${version} in process, ${batched ? `batches of ${batch}` : 'single-job calls'}`,
    async round(id, count) {
      const { child, match } = await startProcess(
        process.execPath,
        [path.join(competitorsDir, 'run.mjs'), system, batched ? 'batch' : 'single'],
        { ...process.env, BENCH_DATABASE_URL: dbUrl, BENCH_EVENTS: String(count), BENCH_CONCURRENCY: String(concurrency), BENCH_BATCH: String(batch), BENCH_ROUND: id },
        /^RESULT (.+)$/m,
      );
      await stopProcess(child);
      return JSON.parse(match[1]) as Phases;
    },
  };
}

const rate = (count: number, ms: number) => (count * 1000) / ms;
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const spreadOf = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

const servers: Array<Awaited<ReturnType<typeof startProcess>>> = [];
let inProcess: Awaited<ReturnType<typeof tollgateInProcess>> | null = null;
try {
  installCompetitors();
  const started = await startProcess(
    process.execPath,
    [...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []), '--import', 'tsx', path.join(here, 'server.ts')],
    { ...process.env, BENCH_DATABASE_URL: dbUrl },
    /^BENCH_READY (.+)$/m,
  );
  servers.push(started);
  const ready = JSON.parse(started.match[1]) as { api: string; apiKey: string };
  const contenders = [
    tollgate(ready, false),
    tollgate(ready, true),
    competitor('pg-boss', false),
    competitor('pg-boss', true),
    competitor('graphile-worker', false),
    competitor('graphile-worker', true),
    (inProcess = await tollgateInProcess()),
    tollgateInProcessBatches(inProcess.services),
  ];
  const [single, batched, bossSingle, bossBatched, , workerBatched, singleInProcess, batchesInProcess] = contenders;
  // BENCH_ONLY=<substring>|<substring>: run only the matching contenders (ratios only between those that ran).
  const only = process.env.BENCH_ONLY;
  if (only) contenders.splice(0, contenders.length, ...contenders.filter((c) => only.split('|').some((part) => c.name.includes(part))));

  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    console.log(line);
  };
  for (const [i, contender] of contenders.entries()) await withTimeout(`warm-up ${contender.name}`, contender.round(`w${i}`, 500));

  const totals = new Map<Contender, number[]>(contenders.map((c) => [c, []]));
  const phases = new Map<Contender, Phases[]>(contenders.map((c) => [c, []]));
  for (let round = 1; round <= rounds; round += 1) {
    // Rotate who goes first, so a busy moment of the machine hurts everyone alike.
    const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]);
    for (const contender of order) {
      const result = await withTimeout(contender.name, contender.round(`r${round}c${contenders.indexOf(contender)}`, eventsPerRound));
      const total = rate(eventsPerRound, result.publishMs + result.consumeMs);
      totals.get(contender)!.push(total);
      phases.get(contender)!.push(result);
      const load = os.loadavg()[0].toFixed(1);
      log(`round ${round} ${contender.name}: ${fmt(total)} events/s end to end (publish ${fmt(rate(eventsPerRound, result.publishMs))}/s, claim+ack ${fmt(rate(eventsPerRound, result.consumeMs))}/s; load ${load})`);
    }
  }

  const ratios = (a: Contender, b: Contender) => (totals.get(a) ?? []).map((t, i) => t / (totals.get(b)?.[i] ?? NaN));
  const targets = [
    { label: 'batched / graphile-worker (batched)', values: ratios(batched, workerBatched), target: 1.0 },
    { label: 'batched / pg-boss (batched)', values: ratios(batched, bossBatched), target: 1.0 },
    { label: 'batched / our single-event path', values: ratios(batched, single), target: 5.0 },
    { label: 'single-event path / pg-boss (single)', values: ratios(single, bossSingle), target: 1.0 },
    { label: 'diagnostic: the same path in process, no HTTP / pg-boss (single)', values: ratios(singleInProcess, bossSingle), target: null },
    { label: 'diagnostic: the batched path in process, no HTTP / pg-boss (batched)', values: ratios(batchesInProcess, bossBatched), target: null },
  ].filter((t) => t.values.length > 0 && t.values.every(Number.isFinite)); // BENCH_ONLY may leave a side out
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  const table = [
    `Machine: ${machine()}; PostgreSQL ${pgVersion} on loopback (synchronous_commit=${syncCommit}); load average at the end ${load}; ${new Date().toISOString()}`,
    `Workload per round: ${eventsPerRound} events published by ${concurrency} concurrent publishers, then claimed and acked by ${concurrency} concurrent consumers (batches of ${batch} where batched); ${rounds} rounds, contenders interleaved.`,
    '',
    '| system | events/s end to end: median (min–max) | publish/s (median) | claim+ack/s (median) |',
    '|---|---|---|---|',
    ...contenders.map((c) => {
      const t = totals.get(c)!;
      const p = phases.get(c)!;
      return `| ${c.name} | ${fmt(median(t))} (${fmt(Math.min(...t))}–${fmt(Math.max(...t))}) | ${fmt(median(p.map((r) => rate(eventsPerRound, r.publishMs))))} | ${fmt(median(p.map((r) => rate(eventsPerRound, r.consumeMs))))} |`;
    }),
    '',
    '| ratio (per round, same run) | median | spread | target | verdict |',
    '|---|---|---|---|---|',
    ...targets.map((t) =>
      t.target === null
        ? `| ${t.label} | ${median(t.values).toFixed(2)}× | ${spreadOf(t.values)}× | — | — |`
        : `| ${t.label} | ${median(t.values).toFixed(2)}× | ${spreadOf(t.values)}× | ≥ ${t.target.toFixed(1)}× | ${median(t.values) >= t.target ? 'PASS' : 'MISS'} |`,
    ),
  ];
  console.log(`\n${table.join('\n')}`);
  fs.writeFileSync(out, `# bench/queue results\n\n${table.join('\n')}\n\n## Rounds\n\n${lines.map((l) => `- ${l}`).join('\n')}\n`);
  console.log(`\nwritten to ${out}`);
} finally {
  await inProcess?.close().catch(() => {});
  for (const server of servers) await stopProcess(server.child).catch(() => {});
  await admin(`drop database if exists ${database} with (force)`).catch(() => {});
}
