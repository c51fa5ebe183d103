import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventsHarness, type EventsHarness } from './harness.js';

const PROJECT = 'project-a';
const EVENTS = 10_000;
const PUBLISH_BATCH = 500;
const CONSUMERS = 8;
const CLAIM_BATCH = 50;

let h: EventsHarness;
beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('batch claims under concurrency', () => {
  it(`${CONSUMERS} consumers claiming ${CLAIM_BATCH} at a time over ${EVENTS} events published in batches: 0 lost, 0 handed out twice`, async () => {
    const queue = await h.queues.create(PROJECT, { name: 'batch-load', defaultLeaseSeconds: 600, maxAttempts: 5 });
    const deliveries = new Map<string, number>();
    const acks = new Map<string, number>();
    let acked = 0;
    let refused = 0;

    const publisher = async () => {
      for (let start = 0; start < EVENTS; start += PUBLISH_BATCH) {
        const batch = Array.from({ length: PUBLISH_BATCH }, (_, i) => ({ payload: { n: start + i } }));
        const published = await h.batches.publishMany(PROJECT, queue.id, batch);
        expect(published.every((p) => p.created)).toBe(true);
      }
    };
    const consumer = async () => {
      while (acked < EVENTS) {
        const claimed = await h.batches.claimMany(PROJECT, queue.id, CLAIM_BATCH, { waitSeconds: 1 });
        for (const { event } of claimed) deliveries.set(event.id, (deliveries.get(event.id) ?? 0) + 1);
        if (claimed.length === 0) continue;
        const results = await h.batches.ackMany(PROJECT, claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken })));
        for (const result of results) {
          if (!result.ok) refused += 1;
          else acks.set(result.eventId, (acks.get(result.eventId) ?? 0) + 1);
        }
        acked += results.filter((r) => r.ok).length;
      }
    };

    await Promise.all([publisher(), ...Array.from({ length: CONSUMERS }, consumer)]);

    expect(refused).toBe(0);
    expect(deliveries.size).toBe(EVENTS);
    expect([...deliveries.values()].filter((count) => count !== 1)).toEqual([]);
    expect(acks.size).toBe(EVENTS);
    expect([...acks.values()].filter((count) => count !== 1)).toEqual([]);
    const stats = await h.events.stats(PROJECT, queue.id);
    expect(stats).toMatchObject({ ready: 0, leased: 0, acked: EVENTS, dead: 0 });
    expect(await h.batches.claimMany(PROJECT, queue.id, CLAIM_BATCH)).toEqual([]);
  });

  it(`${CONSUMERS} consumers draining with ack-and-claim (one statement per batch) while events are published: 0 lost, 0 handed out twice`, async () => {
    const queue = await h.queues.create(PROJECT, { name: 'ack-and-claim-load', defaultLeaseSeconds: 600, maxAttempts: 5 });
    const deliveries = new Map<string, number>();
    let acked = 0;
    let refused = 0;
    const publisher = async () => {
      for (let start = 0; start < EVENTS; start += PUBLISH_BATCH) {
        await h.batches.publishMany(PROJECT, queue.id, Array.from({ length: PUBLISH_BATCH }, (_, i) => ({ payload: { n: start + i } })));
      }
    };
    const consumer = async () => {
      let claimed = await h.batches.claimMany(PROJECT, queue.id, CLAIM_BATCH, { waitSeconds: 1 });
      while (acked < EVENTS) {
        for (const { event } of claimed) deliveries.set(event.id, (deliveries.get(event.id) ?? 0) + 1);
        const leases = claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken }));
        if (leases.length === 0) {
          claimed = await h.batches.claimMany(PROJECT, queue.id, CLAIM_BATCH, { waitSeconds: 1 });
          continue;
        }
        const answer = await h.batches.ackAndClaim(PROJECT, queue.id, leases, CLAIM_BATCH, { waitSeconds: 1 });
        refused += answer.acked.filter((r) => !r.ok).length;
        acked += answer.acked.filter((r) => r.ok).length;
        claimed = answer.claimed;
      }
      // Hand back what the last call claimed after the count was reached (nothing, if all went once).
      for (const { event } of claimed) deliveries.set(event.id, (deliveries.get(event.id) ?? 0) + 1);
    };

    await Promise.all([publisher(), ...Array.from({ length: CONSUMERS }, consumer)]);

    expect(refused).toBe(0);
    expect(acked).toBe(EVENTS);
    expect(deliveries.size).toBe(EVENTS);
    expect([...deliveries.values()].filter((count) => count !== 1)).toEqual([]);
    expect(await h.events.stats(PROJECT, queue.id)).toMatchObject({ ready: 0, leased: 0, acked: EVENTS, dead: 0, leaseExpiries: 0 });
  });
});
