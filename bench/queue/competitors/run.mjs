// One round of one in-process queue, in its own process (like the Tollgate server): publish N jobs
// with C concurrent publishers, then drain them with C concurrent consumers. Prints one line
// `RESULT {"publishMs", "consumeMs"}`; setup (schema migration, queue creation) is not timed.
//   node run.mjs <pg-boss|graphile-worker> <single|batch>
//   env: BENCH_DATABASE_URL, BENCH_EVENTS (N), BENCH_CONCURRENCY (C), BENCH_BATCH (jobs per call in batch mode),
//        BENCH_ROUND (names the schema, unique per round)
import { PgBoss } from 'pg-boss';
import { Logger, makeWorkerUtils, run } from 'graphile-worker';

const [system, mode] = process.argv.slice(2);
const url = process.env.BENCH_DATABASE_URL;
const count = Number(process.env.BENCH_EVENTS ?? 10000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8);
const batch = Number(process.env.BENCH_BATCH ?? 100);
const round = (process.env.BENCH_ROUND ?? 'r').replace(/\W/g, '_');
const batched = mode === 'batch';

/** Runs `job` from `concurrency` loops until `total` units are claimed by them; each call takes `step` units. */
async function spread(total, step, job) {
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

const payload = (n) => ({ n, at: Date.now() });
const timed = async (work) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};

async function pgBoss() {
  const boss = new PgBoss({ connectionString: url, schema: `pgboss_${round}`, max: 10 });
  boss.on('error', (error) => console.error('pg-boss error', error));
  await boss.start();
  const queue = 'bench';
  await boss.createQueue(queue);
  const step = batched ? batch : 1;
  const publishMs = await timed(() =>
    spread(count, step, async (from, n) => {
      if (batched) await boss.insert(queue, Array.from({ length: n }, (_, i) => ({ data: payload(from + i) })));
      else await boss.send(queue, payload(from));
    }),
  );
  let done = 0;
  const consumeMs = await timed(() =>
    Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (done < count) {
          const jobs = await boss.fetch(queue, { batchSize: step });
          if (!jobs.length) continue;
          await boss.complete(queue, jobs.map((job) => job.id));
          done += jobs.length;
        }
      }),
    ),
  );
  await boss.stop({ graceful: false, wait: true });
  if (done !== count) throw new Error(`pg-boss completed ${done} of ${count}`);
  return { publishMs, consumeMs };
}

async function graphileWorker() {
  const schema = `graphile_worker_${round}`;
  const utils = await makeWorkerUtils({ connectionString: url, schema });
  await utils.migrate();
  const step = batched ? batch : 1;
  const publishMs = await timed(() =>
    spread(count, step, async (from, n) => {
      if (batched) await utils.addJobs(Array.from({ length: n }, (_, i) => ({ identifier: 'bench', payload: payload(from + i) })));
      else await utils.addJob('bench', payload(from));
    }),
  );
  let done = 0;
  let finish;
  const drained = new Promise((resolve) => (finish = resolve));
  const started = performance.now();
  // Batch mode uses graphile-worker's own batching: a local queue of locked jobs and batched completions.
  const runner = await run({
    connectionString: url,
    schema,
    concurrency,
    noHandleSignals: true,
    pollInterval: 100,
    ...(batched ? { preset: { worker: { localQueue: { size: batch }, completeJobBatchDelay: 0 } } } : {}),
    crontab: '',
    logger: new Logger(() => (level, message) => level === 'error' && console.error(message)),
    taskList: {
      bench: async () => {
        if (++done === count) finish();
      },
    },
  });
  await drained;
  const consumeMs = performance.now() - started;
  await runner.stop();
  await utils.release();
  return { publishMs, consumeMs };
}

const result = system === 'pg-boss' ? await pgBoss() : system === 'graphile-worker' ? await graphileWorker() : null;
if (!result) throw new Error(`unknown system ${system}`);
console.log(`RESULT ${JSON.stringify(result)}`);
