import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventsServices, type EventsServices } from '../../src/modules/events/services.js';
import type { Clock } from '../../src/platform/clock.js';
import { SecretHasher } from '../../src/platform/secrets.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';

// Two nodes on one database whose clocks disagree by an hour: leases are timed by the database's
// now(), so the fast node never sees a running lease as expired and never takes it a second time.

const PROJECT = 'project-skew';
const skewed = (offsetMs: number): Clock => ({ now: () => new Date(Date.now() + offsetMs) });

let testDatabase: TestDatabase;
let nodes: EventsServices[];
beforeAll(async () => {
  testDatabase = await openTestDatabase();
  const hasher = new SecretHasher(randomBytes(32).toString('hex'));
  const node = (clock: Clock) =>
    createEventsServices({ database: testDatabase.database, clock, hasher, log: pino({ level: 'silent' }) }, { databaseTime: true });
  nodes = [node(skewed(0)), node(skewed(3_600_000)), node(skewed(-3_600_000))];
});
afterAll(async () => {
  for (const node of nodes ?? []) {
    node.waiters.close();
    node.notifier.close();
  }
  await testDatabase?.close();
});

describe('leases under clock skew', () => {
  it('a lease taken on one node is held on a node an hour ahead, and a node an hour behind sees it end on time', async () => {
    const [accurate, ahead, behind] = nodes as [EventsServices, EventsServices, EventsServices];
    const queue = await accurate.queues.create(PROJECT, { name: 'skew', defaultLeaseSeconds: 2, maxAttempts: 5 });
    const published = await accurate.events.publish(PROJECT, queue.id, { payload: { n: 1 } });
    expect(published.created).toBe(true);

    const first = await accurate.events.claim(PROJECT, queue.id);
    expect(first?.event.id).toBe(published.event.id);
    // An hour ahead by its own clock, the lease would look long expired.
    expect(await ahead.events.claim(PROJECT, queue.id)).toBeNull();
    expect(await behind.events.claim(PROJECT, queue.id)).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // After the 2 s lease the node an hour behind may take it again (once).
    const second = await behind.events.claim(PROJECT, queue.id);
    expect(second?.event.id).toBe(published.event.id);
    expect(second?.event.attempts).toBe(2);
    expect(await ahead.events.claim(PROJECT, queue.id)).toBeNull();
  });

  it('a delayed publish becomes available by the database clock, not the publishing node’s', async () => {
    const [accurate, , behind] = nodes as [EventsServices, EventsServices, EventsServices];
    const queue = await behind.queues.create(PROJECT, { name: 'delay', defaultLeaseSeconds: 30, maxAttempts: 5 });
    // By its own clock (an hour behind) this event would be due an hour ago plus a minute.
    await behind.events.publish(PROJECT, queue.id, { payload: { n: 2 }, delaySeconds: 60 });
    expect(await accurate.events.claim(PROJECT, queue.id)).toBeNull();
  });
});
