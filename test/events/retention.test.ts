import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toEventRow, type RawEventRow } from '../../src/modules/events/event-rows.js';
import { PURGE } from '../../src/modules/events/limits.js';
import { effectiveStatus } from '../../src/modules/events/records.js';
import { RetentionStore } from '../../src/modules/events/retention-store.js';
import { openEventsHarness, type EventsHarness } from './harness.js';

// Retention: finished events (acked, dead, expired, superseded) are purged once their queue's
// retention has passed since they finished; open ones never are. Stats read terminal counts kept
// by the statements that finish events, so they stay right across purges. ManualClock throughout.

const PROJECT = 'project-a';
const HOUR = 3600;
let h: EventsHarness;

beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.clock.set('2026-03-05T00:00:00Z');
});

let counter = 0;
const queueWith = (options: { retentionSeconds?: number; maxAttempts?: number; defaultLeaseSeconds?: number } = {}) =>
  h.queues.create(PROJECT, { name: `retention-${++counter}`, defaultLeaseSeconds: options.defaultLeaseSeconds ?? 30, maxAttempts: options.maxAttempts ?? 5, retentionSeconds: options.retentionSeconds });

const seconds = (n: number) => h.clock.advance(n * 1000);

async function rowsOf(queueId: string) {
  const raw = await h.testDatabase.database.query<RawEventRow>(sql`select * from events where queue_id = ${queueId}`);
  return raw.map(toEventRow);
}

/** The depth stats must report, counted the slow way: every row of the queue, by the status a reader sees. */
async function groundTruth(queueId: string) {
  const now = h.clock.now();
  const depth = { ready: 0, delayed: 0, leased: 0, acked: 0, dead: 0, expired: 0, superseded: 0 };
  for (const row of await rowsOf(queueId)) {
    const status = effectiveStatus(row, now);
    if (status === 'available') depth[row.status === 'leased' || row.availableAt <= now ? 'ready' : 'delayed'] += 1;
    else depth[status] += 1;
  }
  return depth;
}

async function expectStatsTruthful(queueId: string) {
  const { leaseExpiries: _e, oldestReadyAgeSeconds: _a, ...depth } = await h.events.stats(PROJECT, queueId);
  expect(depth).toEqual(await groundTruth(queueId));
  return depth;
}

async function publishAndClaim(queueId: string, n: number) {
  const claimed = [];
  for (let i = 0; i < n; i++) {
    await h.events.publish(PROJECT, queueId, { payload: { i } });
    claimed.push((await h.events.claim(PROJECT, queueId))!);
  }
  return claimed;
}

describe('retention purge', () => {
  it('purges finished events older than the retention, keeps younger and open ones; stats stay right', async () => {
    const queue = await queueWith({ retentionSeconds: HOUR, maxAttempts: 1 });
    const [a, b, c, d] = await publishAndClaim(queue.id, 4);
    await h.events.ack(PROJECT, a.event.id, a.leaseToken);
    await h.events.ack(PROJECT, b.event.id, b.leaseToken);
    await h.events.nack(PROJECT, c.event.id, c.leaseToken, { error: 'boom' }); // last attempt: dead
    const waiting = (await h.events.publish(PROJECT, queue.id, { payload: { waiting: true } })).event;
    const later = (await h.events.publish(PROJECT, queue.id, { payload: { later: true }, delaySeconds: 2 * HOUR })).event;
    seconds(30);
    await h.sweeper.sweep(); // d's lease ran out on its last attempt: dead, finished now (T+30 s)
    expect((await h.events.get(PROJECT, d.event.id)).status).toBe('dead');
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ ready: 1, delayed: 1, acked: 2, dead: 2 });

    // One second short of the retention for a, b and c: nothing goes.
    seconds(HOUR - 31);
    expect((await h.retention.purge()).purged).toBe(0);
    expect(await rowsOf(queue.id)).toHaveLength(6);

    // Past it: a, b and c go; d (finished 30 s later) stays until its own hour is over.
    seconds(2);
    const live = (await h.events.claim(PROJECT, queue.id, { leaseSeconds: 3600 }))!; // the waiting event, leased now
    expect(live.event.id).toBe(waiting.id);
    expect(await h.retention.purge()).toEqual({ purged: 3, more: false });
    expect((await rowsOf(queue.id)).map((row) => row.id).sort()).toEqual([d.event.id, waiting.id, later.id].sort());
    expect(await expectStatsTruthful(queue.id)).toEqual({ ready: 0, delayed: 1, leased: 1, acked: 0, dead: 1, expired: 0, superseded: 0 });

    seconds(30);
    expect((await h.retention.purge()).purged).toBe(1);
    // Open events are never purged, however old: the leased one and the delayed one stay.
    seconds(10 * HOUR);
    await h.sweeper.sweep(); // the 1-hour lease of `waiting` ran out on its last attempt: dead now
    expect((await h.retention.purge()).purged).toBe(0);
    expect((await rowsOf(queue.id)).map((row) => [row.id, row.status]).sort()).toEqual(
      [
        [waiting.id, 'dead'],
        [later.id, 'available'],
      ].sort(),
    );
    await expectStatsTruthful(queue.id);
    await expect(h.events.get(PROJECT, a.event.id)).rejects.toMatchObject({ status: 404 });
  });

  it('expired and superseded events of a schedule are purged like acked ones', async () => {
    const queue = await queueWith({ retentionSeconds: 60 });
    const { schedule } = await h.schedules.upsert(PROJECT, {
      queueId: queue.id,
      externalId: `retention-schedule-${counter}`,
      name: 'every minute',
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
      payload: {},
      overlapPolicy: 'latest',
      maxEventAgeSeconds: 30,
    });
    await h.scheduler.tick(); // registers: next tick 00:01
    for (let i = 0; i < 2; i++) {
      h.clock.set((await h.schedules.get(PROJECT, schedule.id)).nextFireAt!);
      await h.scheduler.tick();
    }
    // The second tick superseded the first tick's event; 31 s later the second one is past its age.
    seconds(31);
    await h.sweeper.sweep();
    expect((await rowsOf(queue.id)).map((row) => row.status).sort()).toEqual(['expired', 'superseded']);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ expired: 1, superseded: 1 });

    seconds(30); // superseded at 00:02:00, expired at 00:02:31: only the first is a minute old
    expect((await h.retention.purge()).purged).toBe(1);
    expect((await rowsOf(queue.id)).map((row) => row.status)).toEqual(['expired']);
    seconds(31);
    expect((await h.retention.purge()).purged).toBe(1);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ expired: 0, superseded: 0 });
    await h.schedules.delete(PROJECT, schedule.id);
  });

  it("each queue keeps its own retention, and a change applies to events finished before it", async () => {
    const short = await queueWith({ retentionSeconds: 60 });
    const long = await queueWith({}); // the default: 7 days
    expect(long.retentionSeconds).toBe(7 * 24 * HOUR);
    for (const queue of [short, long]) {
      const [claimed] = await publishAndClaim(queue.id, 1);
      await h.events.ack(PROJECT, claimed.event.id, claimed.leaseToken);
    }
    seconds(61);
    expect((await h.retention.purge()).purged).toBe(1);
    expect(await rowsOf(short.id)).toHaveLength(0);
    expect(await rowsOf(long.id)).toHaveLength(1);

    expect((await h.queues.setRetention(PROJECT, long.id, 60)).retentionSeconds).toBe(60);
    expect((await h.retention.purge()).purged).toBe(1);
    expect(await rowsOf(long.id)).toHaveLength(0);
    await expect(h.queues.setRetention('another-project', short.id, 60)).rejects.toMatchObject({ status: 404, code: 'queue_not_found' });
  });

  it('a redriven dead event is open again: never purged, and counted as ready, not dead', async () => {
    const queue = await queueWith({ retentionSeconds: 60, maxAttempts: 1 });
    const [claimed] = await publishAndClaim(queue.id, 1);
    await h.events.nack(PROJECT, claimed.event.id, claimed.leaseToken);
    seconds(59);
    expect((await h.events.redrive(PROJECT, queue.id, { eventIds: [claimed.event.id] })).eventIds).toEqual([claimed.event.id]);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ ready: 1, dead: 0 });
    seconds(HOUR);
    expect((await h.retention.purge()).purged).toBe(0);
    expect((await h.events.get(PROJECT, claimed.event.id)).status).toBe('available');
  });

  it('purges in bounded batches: at most PURGE.batch rows a statement, a few statements a run', async () => {
    const queue = await queueWith({ retentionSeconds: 60 });
    const total = PURGE.batch * PURGE.statementsPerRun + 500;
    await seedFinished(queue.id, total, h.clock.now());
    expect((await h.events.stats(PROJECT, queue.id)).acked).toBe(total);
    seconds(61);

    const store = new RetentionStore(h.testDatabase.database.db, false);
    expect(await store.purgeFinished(h.clock.now(), PURGE.batch)).toBe(PURGE.batch);
    expect(await h.retention.purge()).toEqual({ purged: PURGE.batch * (PURGE.statementsPerRun - 1) + 500, more: false });
    expect(await rowsOf(queue.id)).toHaveLength(0);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ acked: 0 });

    // A run stops after its statements and says there is more.
    await seedFinished(queue.id, PURGE.batch * PURGE.statementsPerRun + 1, h.clock.now());
    seconds(61);
    expect(await h.retention.purge()).toEqual({ purged: PURGE.batch * PURGE.statementsPerRun, more: true });
    expect(await h.retention.purge()).toEqual({ purged: 1, more: false });
  });
});

describe('terminal counts', () => {
  it('stay equal to the rows over every path that finishes or reopens events', async () => {
    const queue = await queueWith({ maxAttempts: 2, retentionSeconds: 60 });
    const claimed = await publishAndClaim(queue.id, 8);
    const lease = (i: number) => ({ eventId: claimed[i].event.id, leaseToken: claimed[i].leaseToken });
    await h.events.ack(PROJECT, claimed[0].event.id, claimed[0].leaseToken);
    await h.events.ack(PROJECT, claimed[0].event.id, claimed[0].leaseToken); // a repeated ack counts once
    await h.batches.ackMany(PROJECT, [lease(1), lease(2), lease(1)]);
    await h.events.nack(PROJECT, claimed[3].event.id, claimed[3].leaseToken, { retryDelaySeconds: 0 }); // available again
    await h.batches.nackMany(PROJECT, [{ ...lease(4), retryDelaySeconds: 0 }]);
    await expectStatsTruthful(queue.id);

    // Second deliveries of 3 and 4 fail for good (dead), one by one and in a batch.
    const again = [(await h.events.claim(PROJECT, queue.id))!, (await h.events.claim(PROJECT, queue.id))!];
    await h.events.nack(PROJECT, again[0].event.id, again[0].leaseToken);
    await h.batches.nackMany(PROJECT, [{ eventId: again[1].event.id, leaseToken: again[1].leaseToken }]);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ acked: 3, dead: 2, leased: 3 });

    // Leases 5..7 run out: on their first attempt they are ready again (and counted so before the sweep).
    seconds(30);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ ready: 3, leased: 0 });
    await h.sweeper.sweep();
    await expectStatsTruthful(queue.id);
    const x = await h.events.claim(PROJECT, queue.id);
    seconds(30); // lapsed on its last attempt: dead before the sweep records it, and after
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ dead: 3 });
    await h.sweeper.sweep();
    expect((await h.events.get(PROJECT, x!.event.id)).status).toBe('dead');
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ dead: 3 });

    await h.events.redrive(PROJECT, queue.id, { all: true, limit: 10 });
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ dead: 0 });
    seconds(61);
    while ((await h.retention.purge()).more);
    expect(await expectStatsTruthful(queue.id)).toMatchObject({ acked: 0, ready: 5 });
  });

  it('are deleted with their queue', async () => {
    const queue = await queueWith();
    const [claimed] = await publishAndClaim(queue.id, 1);
    await h.events.ack(PROJECT, claimed.event.id, claimed.leaseToken);
    const counts = () => h.testDatabase.database.query(sql`select * from event_queue_counts where queue_id = ${queue.id}`);
    expect(await counts()).toHaveLength(1);
    await h.queues.delete(PROJECT, queue.id);
    expect(await counts()).toHaveLength(0);
  });
});

/** `n` acked events finished at `at`, inserted in one statement, with their terminal count. */
async function seedFinished(queueId: string, n: number, at: Date) {
  const db = h.testDatabase.database;
  await db.query(sql`
    insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at, finished_at)
    select gen_random_uuid(), ${PROJECT}, ${queueId}, '{}'::jsonb, 'acked', 1, 5, ${at}, ${at}, ${at}, ${at} from generate_series(1, ${n})`);
  await db.query(sql`
    insert into event_queue_counts as c (queue_id, slot, acked) values (${queueId}, 0, ${n})
    on conflict (queue_id, slot) do update set acked = c.acked + excluded.acked`);
}
