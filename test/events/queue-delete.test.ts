import { sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckViolation } from '../../src/platform/db-errors.js';
import { deleteEventsOf } from '../../src/modules/events/queue-store.js';
import { openEventsHarness, type EventsHarness } from './harness.js';

// Events carry no foreign key to their queue (tables.ts): a queue's delete removes them itself, and every
// insert holds the queue row FOR KEY SHARE so that none lands beside a delete.

const PROJECT = 'project-a';
let h: EventsHarness;
beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});

const eventsOf = async (queueId: string) =>
  (await h.testDatabase.database.query<{ n: number }>(sql`select count(*)::int as n from events where queue_id = ${queueId}`))[0].n;

describe("a queue's delete", () => {
  it('removes its events in every state, and no other queue\'s', async () => {
    const [doomed, kept] = await Promise.all(['doomed', 'kept'].map((name) => h.queues.create(PROJECT, { name, defaultLeaseSeconds: 30, maxAttempts: 1 })));
    for (const queue of [doomed, kept]) {
      await h.batches.publishMany(PROJECT, queue.id, Array.from({ length: 4 }, (_, n) => ({ payload: { n } })));
      const [acked, nacked, leased] = await h.batches.claimMany(PROJECT, queue.id, 3);
      await h.events.ack(PROJECT, acked.event.id, acked.leaseToken);
      await h.events.nack(PROJECT, nacked.event.id, nacked.leaseToken, { error: 'last attempt' });
      expect(leased).toBeDefined();
    }
    const states = await h.testDatabase.database.query<{ status: string }>(sql`select status from events where queue_id = ${doomed.id} order by status`);
    expect(states.map((row) => row.status)).toEqual(['acked', 'available', 'dead', 'leased']);

    await h.queues.delete(PROJECT, doomed.id);
    expect(await eventsOf(doomed.id)).toBe(0);
    expect(await eventsOf(kept.id)).toBe(4);
  });

  it('the database refuses an event whose finished_at disagrees with its state (the delete relies on it)', async () => {
    const queue = await h.queues.create(PROJECT, { name: 'checked', defaultLeaseSeconds: 30, maxAttempts: 1 });
    const insert = (status: string, finished: Date | null) =>
      h.testDatabase.database.query(sql`
        insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at, finished_at)
        values (gen_random_uuid(), ${PROJECT}, ${queue.id}, '{}'::jsonb, ${status}, 0, 1, now(), now(), now(), ${finished}::timestamptz)`);
    for (const [status, finished] of [['acked', null], ['available', new Date()]] as const) {
      const refused = await insert(status, finished).then(() => null, (error: unknown) => error);
      expect(isCheckViolation(refused, 'events_finished_when_terminal'), String(refused)).toBe(true);
    }
    await insert('dead', new Date());
    expect(await eventsOf(queue.id)).toBe(1);
  });
});

// Two connections: one deletes the queue and holds its transaction open, the other publishes meanwhile.
describe.skipIf(!process.env.DATABASE_URL)("a publish beside a queue's delete (PostgreSQL)", () => {
  const publishes = {
    single: (queueId: string) => h.events.publish(PROJECT, queueId, { payload: { n: 1 } }),
    batch: (queueId: string) => h.batches.publishMany(PROJECT, queueId, [{ payload: { n: 1 } }, { payload: { n: 2 } }]),
  };
  for (const [path, publish] of Object.entries(publishes)) {
    it(`${path}: waits for the delete, then inserts nothing`, async () => {
      const queue = await h.queues.create(PROJECT, { name: `racing-${path}`, defaultLeaseSeconds: 30, maxAttempts: 1 });
      const deleter = new pg.Client({ connectionString: h.testDatabase.url! });
      await deleter.connect();
      try {
        await deleter.query('begin');
        await deleter.query('delete from event_queues where id = $1', [queue.id]);
        let settled = false;
        const publishing = publish(queue.id).then(
          (value) => ((settled = true), value),
          (error: unknown) => ((settled = true), Promise.reject(error)),
        );
        publishing.catch(() => {});
        await new Promise((resolve) => setTimeout(resolve, 300));
        // Without the queue row held FOR KEY SHARE the publish would have read it (the delete is not committed)
        // and inserted at once, an event the delete's next statement cannot see.
        expect(settled).toBe(false);
        const statement = new PgDialect().sqlToQuery(deleteEventsOf(queue.id));
        await deleter.query(statement.sql, statement.params);
        await deleter.query('commit');
        const outcome = await publishing.then(
          (value) => ({ value }),
          (error: { code?: string }) => ({ error: error.code }),
        );
        if (path === 'single') expect(outcome).toEqual({ error: 'queue_not_found' });
        else expect('error' in outcome ? outcome.error : 'published').toBe('queue_not_found');
        expect(await eventsOf(queue.id)).toBe(0);
      } finally {
        await deleter.end();
      }
    });
  }
});
