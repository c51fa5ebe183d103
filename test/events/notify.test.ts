import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_CHANNEL } from '../../src/modules/events/limits.js';
import { createEventsServices, type EventsServices } from '../../src/modules/events/services.js';
import { systemClock } from '../../src/platform/clock.js';
import { openDatabase, type Database } from '../../src/platform/db.js';
import { SecretHasher } from '../../src/platform/secrets.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

// Two nodes on one PostgreSQL database: a publish on one wakes a long poll waiting on the other
// through LISTEN/NOTIFY. (PGlite is a single process: there the in-process wake-up is the path.)
describe.skipIf(!process.env.DATABASE_URL)('wake-ups across nodes (PostgreSQL)', () => {
  let testDatabase: TestDatabase;
  let second: Database;
  let nodes: EventsServices[];
  const unlisten: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    testDatabase = await openTestDatabase();
    second = await openDatabase({ url: testDatabase.url, pgliteDir: null, poolSize: 2 });
    const hasher = new SecretHasher(randomBytes(32).toString('hex'));
    nodes = [testDatabase.database, second].map((database) => createEventsServices({ database, clock: systemClock, hasher, log: pino({ level: 'silent' }) }));
    for (const [index, database] of [testDatabase.database, second].entries()) {
      unlisten.push(await database.listen(EVENTS_CHANNEL, (queueId) => nodes[index].waiters.wake(queueId)));
    }
  });
  afterAll(async () => {
    for (const node of nodes ?? []) {
      node.waiters.close();
      node.notifier.close();
    }
    for (const stop of unlisten) await stop();
    await second?.close();
    await testDatabase?.close();
  });

  it('a publish on node A wakes a claim waiting on node B well before its periodic re-check', async () => {
    const [a, b] = nodes;
    const queue = await a.queues.create('project', { name: 'cross-node', defaultLeaseSeconds: 30, maxAttempts: 3 });
    for (let round = 0; round < 3; round++) {
      const waiting = b.events.claim('project', queue.id, { waitSeconds: 10 });
      await new Promise((resolve) => setTimeout(resolve, 150));
      const publishedAt = Date.now();
      const { event } = await a.events.publish('project', queue.id, { payload: { round } });
      const claimed = await waiting;
      expect(claimed?.event.id).toBe(event.id);
      // The re-check runs every 1000 ms; this is the NOTIFY.
      expect(Date.now() - publishedAt).toBeLessThan(500);
    }
  });
});
