import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventsHarness, type EventsHarness } from './harness.js';

const PROJECT = 'project-a';
const EVENTS = 4_000;
/** Published one by one through the service while the consumers run; the rest are seeded in bulk. */
const PUBLISHED_LIVE = 1_000;
const CONSUMERS = 8;

let h: EventsHarness;
beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('concurrent consumers', () => {
  // A correctness test, not a timing one (bench/queue measures speed): 8 consumers contend for every event, the
  // live publishes land while they claim. It ran 10,000 events, ~100 s of CI's 2 cores for the same contention.
  it(`${CONSUMERS} consumers over ${EVENTS} events: each acked exactly once, none lost`, { timeout: 480_000 }, async () => {
    const queue = await h.queues.create(PROJECT, { name: 'load', defaultLeaseSeconds: 300, maxAttempts: 5 });
    const now = h.clock.now();
    // Bulk seed (one statement keeps the test quick); ids are UUIDv7-shaped like the service's.
    await h.testDatabase.database.query(sql`
      insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at)
      select ('019cbb4b-4c00-7000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, ${PROJECT}, ${queue.id},
             jsonb_build_object('n', n), 'available', 0, 5, ${now}, ${now}, ${now}
      from generate_series(0, ${EVENTS - PUBLISHED_LIVE - 1}) as n`);

    const acks = new Map<string, number>();
    const payloads = new Set<number>();
    let acked = 0;
    // Long polls, not a busy loop, until every event is acked.
    const consumer = async () => {
      while (acked < EVENTS) {
        const claimed = await h.events.claim(PROJECT, queue.id, { waitSeconds: 1 });
        if (!claimed) continue;
        payloads.add(claimed.event.payload.n as number);
        const row = await h.events.ack(PROJECT, claimed.event.id, claimed.leaseToken);
        expect(row.status).toBe('acked');
        acks.set(row.id, (acks.get(row.id) ?? 0) + 1);
        acked += 1;
      }
    };
    const publisher = async () => {
      const ids: string[] = [];
      for (let n = EVENTS - PUBLISHED_LIVE; n < EVENTS; n++) {
        ids.push((await h.events.publish(PROJECT, queue.id, { payload: { n } })).event.id);
      }
      return ids;
    };

    const [published] = await Promise.all([publisher(), ...Array.from({ length: CONSUMERS }, consumer)]);

    expect(published).toHaveLength(PUBLISHED_LIVE);
    expect(acks.size).toBe(EVENTS);
    expect([...acks.values()].every((count) => count === 1)).toBe(true);
    expect(payloads.size).toBe(EVENTS);
    for (const id of published as string[]) expect(acks.get(id)).toBe(1);
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();

    // In the database too: every event acked, on its first delivery.
    const summary = await h.testDatabase.database.query<{ status: string; attempts: number; count: number }>(
      sql`select status, attempts, count(*)::int as count from events where queue_id = ${queue.id} group by status, attempts`,
    );
    expect(summary).toEqual([{ status: 'acked', attempts: 1, count: EVENTS }]);
  });
});
