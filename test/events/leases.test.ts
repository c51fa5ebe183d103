import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/platform/http/errors.js';
import { openEventsHarness, type EventsHarness } from './harness.js';

const PROJECT = 'project-a';
let h: EventsHarness;

// One database for the file; every test works on queues of its own.
beforeAll(async () => {
  h = await openEventsHarness();
});
afterAll(async () => {
  await h?.close();
});
beforeEach(() => {
  h.clock.set('2026-03-05T00:00:00Z');
});

/** The ApiError a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, 'expected the call to fail').not.toBeNull();
  return error as ApiError;
}

async function queueWith(options: { defaultLeaseSeconds?: number; maxAttempts?: number } = {}) {
  return h.queues.create(PROJECT, { name: `q-${Math.random()}`, defaultLeaseSeconds: options.defaultLeaseSeconds ?? 30, maxAttempts: options.maxAttempts ?? 5 });
}

describe('leases', () => {
  it('redelivers an event whose lease expired, with a new token and attempt', async () => {
    const queue = await queueWith({ defaultLeaseSeconds: 30 });
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: { n: 1 } });

    const first = await h.events.claim(PROJECT, queue.id);
    expect(first?.event.id).toBe(event.id);
    expect(first?.leaseExpiresAt.toISOString()).toBe('2026-03-05T00:00:30.000Z');
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();

    h.clock.advance(29_999);
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
    h.clock.advance(1);
    const second = await h.events.claim(PROJECT, queue.id);
    expect(second?.event.id).toBe(event.id);
    expect(second?.event.attempts).toBe(2);
    expect(second?.leaseToken).not.toBe(first?.leaseToken);

    // The first consumer's token is now stale; the second one's completes the event.
    const stale = await failure(h.events.ack(PROJECT, event.id, first!.leaseToken));
    expect([stale.status, stale.code]).toEqual([409, 'lease_token_mismatch']);
    expect((await h.events.ack(PROJECT, event.id, second!.leaseToken)).status).toBe('acked');
  });

  it('the sweeper returns expired leases to the queue, and kills them after the last attempt', async () => {
    const queue = await queueWith({ defaultLeaseSeconds: 10, maxAttempts: 2 });
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: {} });
    await h.events.claim(PROJECT, queue.id);
    h.clock.advance(10_000);
    await h.sweeper.sweep();
    let row = await h.events.get(PROJECT, event.id);
    expect(row.status).toBe('available');
    expect(row.lastError).toMatch(/^lease_expired/);

    await h.events.claim(PROJECT, queue.id);
    h.clock.advance(10_000);
    // Out of attempts: the expired lease is not handed out again.
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
    await h.sweeper.sweep();
    row = await h.events.get(PROJECT, event.id);
    expect(row.status).toBe('dead');
    expect(row.attempts).toBe(2);
    expect((await h.events.listDead(PROJECT, queue.id, 10, null)).map((e) => e.id)).toEqual([event.id]);
  });

  it('heartbeat keeps the lease alive past its first expiry', async () => {
    const queue = await queueWith({ defaultLeaseSeconds: 30 });
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: {} });
    const claimed = (await h.events.claim(PROJECT, queue.id))!;
    for (let i = 0; i < 5; i++) {
      h.clock.advance(20_000);
      const row = await h.events.heartbeat(PROJECT, event.id, claimed.leaseToken, 30);
      expect(row.leaseExpiresAt?.getTime()).toBe(h.clock.now().getTime() + 30_000);
      expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
    }
    // Omitted leaseSeconds means the queue's defaultLeaseSeconds.
    const row = await h.events.heartbeat(PROJECT, event.id, claimed.leaseToken);
    expect(row.leaseExpiresAt?.getTime()).toBe(h.clock.now().getTime() + 30_000);
    expect((await h.events.ack(PROJECT, event.id, claimed.leaseToken)).attempts).toBe(1);
  });

  it('refuses stale tokens with a precise reason', async () => {
    const queue = await queueWith({ defaultLeaseSeconds: 30 });
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: {} });
    const claimed = (await h.events.claim(PROJECT, queue.id))!;

    const wrong = await failure(h.events.heartbeat(PROJECT, event.id, 'not-the-token', 30));
    expect([wrong.status, wrong.code]).toEqual([409, 'lease_token_mismatch']);

    h.clock.advance(30_000);
    for (const call of [
      () => h.events.heartbeat(PROJECT, event.id, claimed.leaseToken, 30),
      () => h.events.ack(PROJECT, event.id, claimed.leaseToken),
      () => h.events.nack(PROJECT, event.id, claimed.leaseToken),
    ]) {
      const error = await failure(call());
      expect([error.status, error.code]).toEqual([409, 'lease_expired']);
    }
    // Still lease_expired after the sweeper recorded the expiry.
    await h.sweeper.sweep();
    expect((await failure(h.events.ack(PROJECT, event.id, claimed.leaseToken))).code).toBe('lease_expired');

    // A lease ended by ack: heartbeat and nack are refused, a repeated ack answers the same.
    const again = (await h.events.claim(PROJECT, queue.id))!;
    await h.events.ack(PROJECT, event.id, again.leaseToken);
    expect((await h.events.ack(PROJECT, event.id, again.leaseToken)).status).toBe('acked');
    const released = await failure(h.events.nack(PROJECT, event.id, again.leaseToken));
    expect([released.status, released.code]).toEqual([409, 'lease_released']);

    // Another project does not see the event at all.
    expect((await failure(h.events.ack('project-b', event.id, again.leaseToken))).status).toBe(404);
  });

  it('nack retries with the default backoff, then the event is dead after maxAttempts', async () => {
    const queue = await queueWith({ maxAttempts: 3 });
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: {} });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const claimed = (await h.events.claim(PROJECT, queue.id))!;
      expect(claimed.event.attempts).toBe(attempt);
      const row = await h.events.nack(PROJECT, event.id, claimed.leaseToken, { error: `failure ${attempt}` });
      if (attempt < 3) {
        expect(row.status).toBe('available');
        delays.push((row.availableAt.getTime() - h.clock.now().getTime()) / 1000);
        expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
        h.clock.set(row.availableAt);
      } else {
        expect(row.status).toBe('dead');
        expect(row.lastError).toBe('failure 3');
        expect(row.finishedAt).not.toBeNull();
      }
    }
    expect(delays).toEqual([2, 4]);
    expect(await h.events.claim(PROJECT, queue.id)).toBeNull();
    expect((await h.events.listDead(PROJECT, queue.id, 10, null)).map((e) => e.id)).toEqual([event.id]);
  });

  it('nack honours an explicit retryDelaySeconds (0 = at once)', async () => {
    const queue = await queueWith();
    const { event } = await h.events.publish(PROJECT, queue.id, { payload: {} });
    const claimed = (await h.events.claim(PROJECT, queue.id))!;
    await h.events.nack(PROJECT, event.id, claimed.leaseToken, { retryDelaySeconds: 0 });
    expect((await h.events.claim(PROJECT, queue.id))?.event.attempts).toBe(2);
  });
});

describe('publishing', () => {
  it('deduplicates per queue and delays delivery', async () => {
    const queue = await queueWith();
    const other = await queueWith();
    const first = await h.events.publish(PROJECT, queue.id, { payload: { v: 1 }, deduplicationKey: 'order-1' });
    const repeat = await h.events.publish(PROJECT, queue.id, { payload: { v: 2 }, deduplicationKey: 'order-1' });
    expect(first.created).toBe(true);
    expect(repeat).toMatchObject({ created: false, event: { id: first.event.id, payload: { v: 1 } } });
    expect((await h.events.publish(PROJECT, other.id, { payload: {}, deduplicationKey: 'order-1' })).created).toBe(true);

    const delayed = await h.events.publish(PROJECT, other.id, { payload: { later: true }, delaySeconds: 60 });
    const now = (await h.events.claim(PROJECT, other.id))!;
    expect(now.event.id).not.toBe(delayed.event.id);
    await h.events.ack(PROJECT, now.event.id, now.leaseToken);
    expect(await h.events.claim(PROJECT, other.id)).toBeNull();
    h.clock.advance(60_000);
    expect((await h.events.claim(PROJECT, other.id))?.event.id).toBe(delayed.event.id);
  });

  it('hands out events oldest first', async () => {
    const queue = await queueWith();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await h.events.publish(PROJECT, queue.id, { payload: { i } })).event.id);
      h.clock.advance(1);
    }
    const claimed: string[] = [];
    for (let i = 0; i < 5; i++) claimed.push((await h.events.claim(PROJECT, queue.id))!.event.id);
    expect(claimed).toEqual(ids);
  });

  it('keeps queues to their project', async () => {
    const queue = await queueWith();
    expect((await failure(h.events.publish('project-b', queue.id, { payload: {} }))).status).toBe(404);
    expect((await failure(h.events.claim('project-b', queue.id))).status).toBe(404);
    expect((await failure(h.queues.get('project-b', queue.id))).status).toBe(404);
  });
});
