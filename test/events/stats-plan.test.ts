import { sql, type SQL } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBatchStore } from '../../src/modules/events/event-batch-store.js';
import { EventStore } from '../../src/modules/events/event-store.js';
import { PURGE } from '../../src/modules/events/limits.js';
import { deleteEventsOf } from '../../src/modules/events/queue-store.js';
import { RetentionStore } from '../../src/modules/events/retention-store.js';
import type { Executor } from '../../src/platform/db.js';
import { openEventsHarness, type EventsHarness } from './harness.js';

// The plans behind "stats cost independent of history" and "each purge batch is cheap", read with
// EXPLAIN on the database the suite runs on (PGlite, or PostgreSQL with DATABASE_URL).

const PROJECT = 'project-a';
const OPEN = 50;
const HISTORY = 20_000;
let h: EventsHarness;
let fresh: { id: string };
let old: { id: string };

beforeAll(async () => {
  h = await openEventsHarness();
  fresh = await queueWithHistory(0);
  old = await queueWithHistory(HISTORY);
  await h.testDatabase.database.query(sql`analyze events`);
}, 120_000);
afterAll(async () => {
  await h?.close();
});

/** The statement a store method runs, caught instead of run (a stand-in executor; rowsOf calls its execute). */
async function statementOf(call: (db: Executor) => Promise<unknown>): Promise<SQL> {
  let caught: SQL | null = null;
  const spy = { execute: async (statement: SQL) => ((caught = statement), { rows: [] }) } as unknown as Executor;
  await call(spy).catch(() => {});
  return caught!;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Actual Rows'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

async function explain(statement: SQL, analyze: boolean): Promise<PlanNode> {
  const options = analyze ? sql.raw('analyze, buffers, format json') : sql.raw('format json');
  const [row] = await h.testDatabase.database.query<{ 'QUERY PLAN': unknown }>(sql`explain (${options}) ${statement}`);
  const plan = row['QUERY PLAN'];
  return (typeof plan === 'string' ? JSON.parse(plan) : plan)[0].Plan as PlanNode;
}

/** A queue with OPEN open events (40 ready, 10 leased) and `history` acked ones, seeded in bulk. */
async function queueWithHistory(history: number) {
  const queue = await h.queues.create(PROJECT, { name: `plan-${history}`, defaultLeaseSeconds: 30, maxAttempts: 5 });
  const now = h.clock.now();
  const lease = new Date(now.getTime() + 30_000);
  await h.testDatabase.database.query(sql`
    insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at,
                        lease_token_hash, lease_expires_at, finished_at)
    select gen_random_uuid(), ${PROJECT}, ${queue.id}, '{}'::jsonb,
           case when n <= ${OPEN - 10} then 'available' when n <= ${OPEN} then 'leased' else 'acked' end,
           1, 5, case when n <= ${OPEN - 10} then ${now}::timestamptz else ${lease}::timestamptz end, ${now}, ${now},
           case when n > ${OPEN - 10} and n <= ${OPEN} then 'hash' end,
           case when n > ${OPEN - 10} and n <= ${OPEN} then ${lease}::timestamptz end,
           case when n > ${OPEN} then ${now}::timestamptz end
    from generate_series(1, ${OPEN + history}) as n`);
  await h.testDatabase.database.query(sql`insert into event_queue_counts (queue_id, slot, acked) values (${queue.id}, 0, ${history})`);
  return queue;
}

describe('query plans', () => {
  it('stats count open events over the claim index only: 20,000 finished events are never read', async () => {
    expect(await h.events.stats(PROJECT, old.id)).toMatchObject({ ready: OPEN - 10, leased: 10, acked: HISTORY });

    for (const queue of [fresh, old]) {
      const statement = await statementOf((db) => new EventStore(db, { asyncLeaseCommits: false, databaseTime: false }).stats(PROJECT, queue.id, h.clock.now()));
      const nodes = nodesOf(await explain(statement, true));
      const onEvents = nodes.filter((node) => node['Relation Name'] === 'events');
      expect(onEvents.length, JSON.stringify(nodes)).toBeGreaterThan(0);
      for (const node of onEvents) {
        // Every read of `events` is a scan of the partial claim index that yields the open events only:
        // the 20,000 finished ones are never visited, in the index or the table.
        // (A bitmap heap scan names its index in the bitmap index scan under it.)
        const index = node['Index Name'] ?? (node['Node Type'] === 'Bitmap Heap Scan' ? node.Plans?.[0]?.['Index Name'] : undefined);
        expect([node['Node Type'], index, node['Actual Rows']]).toEqual([expect.stringMatching(/Index|Bitmap Heap/), 'events_claim_idx', OPEN]);
      }
      // The whole statement reads a few dozen pages at most; the 20,000 events alone fill hundreds.
      expect(nodes[0]['Shared Hit Blocks']! + (nodes[0]['Shared Read Blocks'] ?? 0)).toBeLessThan(60);
    }
  });

  it('a batch ack or nack finds its events by primary key, however many leases the database holds', async () => {
    // 3,000 leases taken after the statistics were gathered (as on a busy queue between two analyzes): a plan
    // through a partial index on leased events reads all of them to find the batch's 100.
    const queue = await h.queues.create(PROJECT, { name: 'plan-leases', defaultLeaseSeconds: 30, maxAttempts: 5 });
    const lease = new Date(h.clock.now().getTime() + 30_000);
    const ids = await h.testDatabase.database.query<{ id: string }>(sql`
      insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at,
                          lease_token_hash, lease_expires_at)
      select gen_random_uuid(), ${PROJECT}, ${queue.id}, '{}'::jsonb, 'leased', 1, 5, ${lease}::timestamptz, ${lease}::timestamptz,
             ${lease}::timestamptz, 'hash', ${lease}::timestamptz
      from generate_series(1, 3000) returning id`);
    const items = ids.slice(0, 100).map(({ id }) => ({ eventId: id, tokenHash: 'not the hash', error: 'x', retryDelaySeconds: null }));
    const store = (db: Executor) => new EventBatchStore(db, { asyncLeaseCommits: false, databaseTime: false });
    const statements = [
      await statementOf((db) => store(db).ackMany({ projectId: PROJECT, items, now: h.clock.now() })),
      await statementOf((db) => store(db).nackMany({ projectId: PROJECT, items, backoff: { base: 2, cap: 60 }, now: h.clock.now() })),
    ];
    for (const statement of statements) {
      // Every scan of `events` (a bitmap heap scan names its index in the bitmap index scan under it) goes
      // through the primary key and meets the batch's 100 events (kept or filtered out), not the 3,000 leases.
      const scans = nodesOf(await explain(statement, true))
        .filter((node) => /Scan/.test(node['Node Type']) && (node['Relation Name'] === 'events' || node['Index Name']?.startsWith('events')))
        .map((node) => ({ node: node['Node Type'], index: node['Index Name'] ?? node.Plans?.[0]?.['Index Name'], met: node['Actual Rows']! + (node['Rows Removed by Filter'] ?? 0) }));
      expect(scans.length).toBeGreaterThan(0);
      for (const scan of scans) expect([scan.index, scan.met <= 100], JSON.stringify(scans)).toEqual(['events_pkey', true]);
    }
  });

  it('a purge batch walks the (queue_id, finished_at) index of each queue, oldest first, and deletes by primary key', async () => {
    const statement = await statementOf((db) => new RetentionStore(db, false).purgeFinished(h.clock.now(), PURGE.batch));
    const nodes = nodesOf(await explain(statement, false));
    // Index scans only (a bitmap heap scan is fed by its index node): never a scan of the whole table.
    expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'events')).toEqual([]);
    const indexes = new Set(nodes.map((node) => node['Index Name']).filter(Boolean));
    expect(indexes.has('events_queue_finished_idx') && indexes.has('events_pkey'), [...indexes].join()).toBe(true);
  });

  it("a queue's delete finds its events through the claim and finished indexes (events carry no foreign key)", async () => {
    // Found by analyze on the queue among 20,000 other events: a plan over the whole table would meet all of them.
    const nodes = nodesOf(await explain(sql`with gone as (${deleteEventsOf(fresh.id)} returning 1) select count(*) from gone`, false));
    expect(nodes.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'events')).toEqual([]);
    const indexes = new Set(nodes.map((node) => node['Index Name']).filter(Boolean));
    expect(indexes.has('events_claim_idx') && indexes.has('events_queue_finished_idx'), [...indexes].join()).toBe(true);
  });
});
