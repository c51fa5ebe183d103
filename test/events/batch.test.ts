// Batches, dead-letter redrive, queue stats and schedule pause/resume over HTTP (extensions).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sweeper } from '../../src/modules/events/sweeper.js';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createProjectKey } from './harness.js';

let app: TestApp;
let key: string;
let otherKey: string;
const clock = new ManualClock('2026-03-05T00:00:00Z');

beforeAll(async () => {
  // No worker role: the lease sweeper runs here only when a test calls it. Its background tick (1 s) would
  // otherwise count a lapsed lease whenever it fell between a clock.advance and the read of the count.
  app = await buildTestApp({ clock, roles: ['api'] });
  key = await createProjectKey(app, 'batch-alice');
  otherKey = await createProjectKey(app, 'batch-bob');
});
afterAll(async () => {
  await app?.close();
});

async function call(method: 'GET' | 'POST', url: string, body?: unknown, credential = key) {
  const response = await app.origins.api!.inject({
    method,
    url,
    headers: { authorization: `Bearer ${credential}` },
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
  });
  return { status: response.statusCode, body: response.json() };
}

let queues = 0;
async function newQueue(settings: Record<string, unknown> = {}): Promise<string> {
  const created = await call('POST', '/v1/event-queues', { name: `batch-${++queues}`, ...settings });
  expect(created.status).toBe(201);
  return created.body.data.id;
}

type Claimed = { event: { id: string; payload: { n: number }; attempts: number }; leaseToken: string };

async function publishMany(queueId: string, events: unknown[]) {
  const published = await call('POST', `/v1/event-queues/${queueId}/events/batch`, { events });
  expect(published.status).toBe(200);
  return published.body.data as { id: string; created: boolean }[];
}

async function claimMany(queueId: string, maxEvents: number, extra: Record<string, unknown> = {}): Promise<Claimed[]> {
  const claimed = await call('POST', `/v1/event-queues/${queueId}/claim`, { maxEvents, ...extra });
  expect(claimed.status).toBe(200);
  expect(Array.isArray(claimed.body.data)).toBe(true);
  return claimed.body.data;
}

const stats = async (queueId: string) => (await call('GET', `/v1/event-queues/${queueId}/stats`)).body.data;

describe('batch publish', () => {
  it('publishes in order and deduplicates against the queue and inside the batch', async () => {
    const queueId = await newQueue();
    await call('POST', `/v1/event-queues/${queueId}/events`, { payload: { n: -1 }, deduplicationKey: 'old' });
    clock.advance(1); // ids order events within a millisecond only inside one batch
    const answers = await publishMany(queueId, [
      { payload: { n: 0 } },
      { payload: { n: 1 }, deduplicationKey: 'old' },
      { payload: { n: 2 }, deduplicationKey: 'twice' },
      { payload: { n: 3 }, deduplicationKey: 'twice' },
      { payload: { n: 4 }, delaySeconds: 60 },
      ...Array.from({ length: 45 }, (_, i) => ({ payload: { n: 5 + i } })),
    ]);
    expect(answers).toHaveLength(50);
    expect(answers.map((a) => a.created).slice(0, 5)).toEqual([true, false, true, false, true]);
    expect(answers[3].id).toBe(answers[2].id);
    expect(answers[1].id).not.toBe(answers[0].id);
    const all = await claimMany(queueId, 100);
    // The older event first, then the batch in its order; the duplicate and the delayed one are not there.
    expect(all.map((c) => c.event.payload.n)).toEqual([-1, 0, 2, ...Array.from({ length: 45 }, (_, i) => 5 + i)]);
    // One claim, one lease token for all its events (each is still acked, nacked or lapses on its own).
    expect(new Set(all.map((c) => c.leaseToken)).size).toBe(1);
    expect((await stats(queueId)).depth).toMatchObject({ ready: 0, delayed: 1, leased: 48 });
  });

  it('refuses a bad item with nothing published: sizes, bounds, other projects', async () => {
    const queueId = await newQueue();
    const big = { payload: { blob: 'x'.repeat(64 * 1024) } };
    const tooLarge = await call('POST', `/v1/event-queues/${queueId}/events/batch`, { events: [{ payload: { n: 1 } }, big] });
    expect(tooLarge).toMatchObject({ status: 413, body: { code: 1007, data: { reason: 'payload_too_large' } } });
    for (const events of [[], Array.from({ length: 1001 }, () => ({ payload: {} })), [{ payload: {}, delaySeconds: -1 }], [{}]]) {
      expect((await call('POST', `/v1/event-queues/${queueId}/events/batch`, { events })).status).toBe(400);
    }
    expect((await call('POST', `/v1/event-queues/${queueId}/events/batch`, { events: [{ payload: {} }] }, otherKey)).status).toBe(404);
    expect((await stats(queueId)).depth.ready).toBe(0);
  });
});

describe('batch claim, ack and nack', () => {
  it('claims up to maxEvents (an empty array when none); without maxEvents the shape is unchanged', async () => {
    const queueId = await newQueue();
    expect(await claimMany(queueId, 10)).toEqual([]);
    await publishMany(queueId, Array.from({ length: 5 }, (_, n) => ({ payload: { n } })));
    expect((await claimMany(queueId, 3)).map((c) => c.event.payload.n)).toEqual([0, 1, 2]);
    const single = await call('POST', `/v1/event-queues/${queueId}/claim`, {});
    expect(single.body.data).toMatchObject({ event: { payload: { n: 3 } }, leaseToken: expect.any(String) });
    for (const maxEvents of [0, 101, 1.5]) expect((await call('POST', `/v1/event-queues/${queueId}/claim`, { maxEvents })).status).toBe(400);
    expect((await call('POST', `/v1/event-queues/${queueId}/claim`, { maxEvents: 5 }, otherKey)).status).toBe(404);
  });

  it('a waiting batch claim is woken by a publish', async () => {
    const queueId = await newQueue();
    const waiting = claimMany(queueId, 10, { waitSeconds: 5 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await publishMany(queueId, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    expect((await waiting).map((c) => c.event.payload.n)).toEqual([1, 2]);
  });

  it('answers each lease on its own: acked, repeated, wrong token, unknown, malformed, another project', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, Array.from({ length: 3 }, (_, n) => ({ payload: { n } })));
    const [a, b] = await claimMany(queueId, 2);
    const [c] = await claimMany(queueId, 1);
    // Events claimed together share their claim's token; another claim's token is not theirs.
    expect([a.leaseToken === b.leaseToken, c.leaseToken === b.leaseToken]).toEqual([true, false]);
    const unknown = '019cbb4b-4c00-7000-8000-000000000000';
    const acked = await call('POST', '/v1/events/ack', {
      leases: [
        { eventId: a.event.id, leaseToken: a.leaseToken },
        { eventId: a.event.id, leaseToken: a.leaseToken },
        { eventId: b.event.id, leaseToken: c.leaseToken },
        { eventId: unknown, leaseToken: 'x' },
        { eventId: 'nope', leaseToken: 'x' },
      ],
    });
    expect(acked.status).toBe(200);
    expect(acked.body.data).toEqual([
      { eventId: a.event.id, ok: true, status: 'acked', availableAt: null },
      { eventId: a.event.id, ok: true, status: 'acked', availableAt: null },
      { eventId: b.event.id, ok: false, error: { code: 1005, reason: 'lease_token_mismatch', message: expect.any(String) } },
      { eventId: unknown, ok: false, error: { code: 1004, reason: 'event_not_found', message: 'Event not found' } },
      { eventId: 'nope', ok: false, error: { code: 1004, reason: 'event_not_found', message: 'Event not found' } },
    ]);
    // Another project's key cannot ack: the event is not found there, and stays leased.
    const foreign = await call('POST', '/v1/events/ack', { leases: [{ eventId: c.event.id, leaseToken: c.leaseToken }] }, otherKey);
    expect(foreign.body.data[0]).toMatchObject({ ok: false, error: { reason: 'event_not_found' } });
    expect((await call('GET', `/v1/events/${c.event.id}`)).body.data.status).toBe('leased');
    // A late ack after the lease ran out is refused as expired.
    clock.advance(31_000);
    const late = await call('POST', '/v1/events/ack', { leases: [{ eventId: b.event.id, leaseToken: b.leaseToken }] });
    expect(late.body.data[0]).toMatchObject({ ok: false, error: { code: 1005, reason: 'lease_expired' } });
    for (const leases of [[], Array.from({ length: 1001 }, () => ({ eventId: unknown, leaseToken: 'x' })), [{ eventId: unknown }]]) {
      expect((await call('POST', '/v1/events/ack', { leases })).status).toBe(400);
    }
  });

  it("one claim's shared token is a lease of each event alone: extended, lapsed and taken over event by event", async () => {
    const queueId = await newQueue();
    await publishMany(queueId, [{ payload: { n: 0 } }, { payload: { n: 1 } }]);
    const [a, b] = await claimMany(queueId, 2, { leaseSeconds: 10 });
    expect(a!.leaseToken).toBe(b!.leaseToken);
    // The heartbeat extends a's lease only: b's lapses, and another consumer takes b over with a token of its own.
    expect((await call('POST', `/v1/events/${a!.event.id}/heartbeat`, { leaseToken: a!.leaseToken, leaseSeconds: 60 })).status).toBe(200);
    clock.advance(11_000);
    const [takenOver] = await claimMany(queueId, 2, { leaseSeconds: 60 });
    expect([takenOver!.event.id, takenOver!.leaseToken === a!.leaseToken]).toEqual([b!.event.id, false]);
    const acked = await call('POST', '/v1/events/ack', { leases: [a!, b!].map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken })) });
    expect(acked.body.data).toMatchObject([
      { eventId: a!.event.id, ok: true, status: 'acked' },
      { eventId: b!.event.id, ok: false, error: { reason: 'lease_token_mismatch' } },
    ]);
    const second = await call('POST', '/v1/events/ack', { leases: [{ eventId: b!.event.id, leaseToken: takenOver!.leaseToken }] });
    expect(second.body.data).toMatchObject([{ eventId: b!.event.id, ok: true, status: 'acked' }]);
  });

  it('nacks each with its own delay; the last attempt is dead; released leases are refused', async () => {
    const queueId = await newQueue({ maxAttempts: 2 });
    await publishMany(queueId, [{ payload: { n: 0 } }, { payload: { n: 1 } }]);
    const [a, b] = await claimMany(queueId, 2);
    const nacked = await call('POST', '/v1/events/nack', {
      leases: [
        { eventId: a.event.id, leaseToken: a.leaseToken, retryDelaySeconds: 0, error: 'boom' },
        { eventId: b.event.id, leaseToken: b.leaseToken },
        { eventId: b.event.id, leaseToken: b.leaseToken },
      ],
    });
    expect(nacked.body.data).toEqual([
      { eventId: a.event.id, ok: true, status: 'available', availableAt: clock.now().toISOString() },
      { eventId: b.event.id, ok: true, status: 'available', availableAt: new Date(clock.now().getTime() + 2000).toISOString() },
      { eventId: b.event.id, ok: false, error: { code: 1005, reason: 'lease_released', message: expect.any(String) } },
    ]);
    expect((await call('GET', `/v1/events/${a.event.id}`)).body.data).toMatchObject({ status: 'available', lastError: 'boom' });
    const [again] = await claimMany(queueId, 5);
    expect(again.event.id).toBe(a.event.id);
    const dead = await call('POST', '/v1/events/nack', { leases: [{ eventId: a.event.id, leaseToken: again.leaseToken }] });
    expect(dead.body.data[0]).toMatchObject({ ok: true, status: 'dead', availableAt: null });
  });
});

describe('dead letters and stats', () => {
  /** A queue with `count` dead events (maxAttempts 1, each nacked once). */
  async function deadQueue(count: number) {
    const queueId = await newQueue({ maxAttempts: 1 });
    await publishMany(queueId, Array.from({ length: count }, (_, n) => ({ payload: { n } })));
    const claimed = await claimMany(queueId, count);
    const nacked = await call('POST', '/v1/events/nack', { leases: claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken, error: 'poison' })) });
    expect(nacked.body.data.every((r: { status: string }) => r.status === 'dead')).toBe(true);
    return { queueId, ids: claimed.map((c) => c.event.id) };
  }

  it('redrives named dead events once, with fresh attempts; others are answered with their status', async () => {
    const { queueId, ids } = await deadQueue(3);
    const elsewhere = (await deadQueue(1)).ids[0];
    const unknown = '019cbb4b-4c00-7000-8000-000000000001';
    const redriven = await call('POST', `/v1/event-queues/${queueId}/dead-events/redrive`, { eventIds: [ids[0], ids[1], unknown, 'bad', elsewhere] });
    expect(redriven.status).toBe(200);
    expect(redriven.body.data).toEqual({
      redriven: 2,
      eventIds: [ids[0], ids[1]].sort(),
      notRedriven: [
        { eventId: unknown, status: null },
        { eventId: 'bad', status: null },
        { eventId: elsewhere, status: null },
      ],
      more: false,
    });
    const again = await call('POST', `/v1/event-queues/${queueId}/dead-events/redrive`, { eventIds: [ids[0]] });
    expect(again.body.data).toMatchObject({ redriven: 0, notRedriven: [{ eventId: ids[0], status: 'available' }] });
    const event = (await call('GET', `/v1/events/${ids[0]}`)).body.data;
    expect(event).toMatchObject({ status: 'available', attempts: 0, lastError: 'poison', finishedAt: null });
    expect((await claimMany(queueId, 10)).map((c) => c.event.id).sort()).toEqual([ids[0], ids[1]].sort());
    expect((await call('GET', `/v1/events/${elsewhere}`)).body.data.status).toBe('dead');
    expect((await call('GET', `/v1/event-queues/${queueId}/dead-events`)).body.data.map((e: { id: string }) => e.id)).toEqual([ids[2]]);
  });

  it('concurrent redrives of all move each dead event back exactly once', async () => {
    const { queueId, ids } = await deadQueue(40);
    const answers = await Promise.all(Array.from({ length: 6 }, () => call('POST', `/v1/event-queues/${queueId}/dead-events/redrive`, { all: true })));
    const moved = answers.flatMap((a) => a.body.data.eventIds as string[]);
    expect(moved.sort()).toEqual([...ids].sort());
    expect((await stats(queueId)).depth).toMatchObject({ ready: 40, dead: 0 });
  });

  it('refuses bad redrive bodies and other projects', async () => {
    const { queueId, ids } = await deadQueue(1);
    for (const body of [{}, { all: false }, { eventIds: [] }, { eventIds: ids, all: true }]) {
      expect((await call('POST', `/v1/event-queues/${queueId}/dead-events/redrive`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await call('POST', `/v1/event-queues/${queueId}/dead-events/redrive`, { all: true }, otherKey)).status).toBe(404);
    expect((await call('GET', `/v1/events/${ids[0]}`)).body.data.status).toBe('dead');
  });

  it('stats: depth by state, the oldest ready age, and lease expiries counted by takeovers and the sweeper', async () => {
    const queueId = await newQueue({ defaultLeaseSeconds: 10 });
    await publishMany(queueId, [...Array.from({ length: 4 }, (_, n) => ({ payload: { n } })), { payload: { n: 9 }, delaySeconds: 600 }]);
    clock.advance(5_000);
    expect(await stats(queueId)).toMatchObject({ queueId, depth: { ready: 4, delayed: 1, leased: 0 }, oldestReadyAgeSeconds: 5, leaseExpiries: 0 });
    const [first, second] = await claimMany(queueId, 2);
    await call('POST', '/v1/events/ack', { leases: [{ eventId: first.event.id, leaseToken: first.leaseToken }] });
    expect((await stats(queueId)).depth).toMatchObject({ ready: 2, leased: 1, acked: 1 });
    // The lease runs out: read as ready again, then taken over by a claim (one expiry).
    clock.advance(11_000);
    expect((await stats(queueId)).depth).toMatchObject({ ready: 3, leased: 0 });
    const retaken = await claimMany(queueId, 3);
    expect(retaken.map((c) => c.event.id)).toContain(second.event.id);
    expect((await stats(queueId)).leaseExpiries).toBe(1);
    // Those three leases run out too, and the sweeper records them.
    clock.advance(11_000);
    await new Sweeper(app.ctx.database.db, clock, { asyncLeaseCommits: false, databaseTime: false }).sweep();
    expect(await stats(queueId)).toMatchObject({ depth: { ready: 3, delayed: 1, leased: 0, acked: 1 }, leaseExpiries: 4 });
    expect((await call('GET', `/v1/event-queues/${queueId}/stats`, undefined, otherKey)).status).toBe(404);
  });
});

describe('schedule pause and resume', () => {
  it('pauses and resumes over HTTP; the record says so; other projects get 404', async () => {
    const queueId = await newQueue();
    const created = await call('POST', '/v1/schedules', { queueId, externalId: 'nightly', name: 'n', schedule: { type: 'cron', expression: '0 3 * * *' }, backfill: 'all' });
    expect(created.body.data).toMatchObject({ backfill: 'all', paused: false, pausedAt: null });
    const id = created.body.data.id;
    const paused = await call('POST', `/v1/schedules/${id}/pause`);
    expect(paused).toMatchObject({ status: 200, body: { message: 'Schedule paused', data: { paused: true, pausedAt: clock.now().toISOString() } } });
    expect((await call('GET', `/v1/schedules/${id}`)).body.data.paused).toBe(true);
    expect((await call('POST', `/v1/schedules/${id}/resume`, undefined, otherKey)).status).toBe(404);
    const resumed = await call('POST', `/v1/schedules/${id}/resume`);
    expect(resumed.body).toMatchObject({ message: 'Schedule resumed', data: { paused: false, pausedAt: null, sync: { status: 'pending' } } });
    expect((await call('POST', '/v1/schedules', { queueId, externalId: 'x', name: 'n', schedule: { type: 'cron', expression: '0 3 * * *' }, backfill: 'some' })).status).toBe(400);
  });
});

describe('ack-and-claim: a batch acked and the next batch claimed in one request (extension)', () => {
  it('drains a queue one request per batch: every event acked once, in order, leases that are real', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, Array.from({ length: 25 }, (_, n) => ({ payload: { n } })));
    let claimed = await claimMany(queueId, 10);
    const seen: number[] = [];
    let requests = 0;
    while (claimed.length > 0) {
      seen.push(...claimed.map((c) => c.event.payload.n));
      const answer = await call('POST', `/v1/event-queues/${queueId}/ack-and-claim`, { leases: claimed.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken })), maxEvents: 10, leaseSeconds: 45 });
      requests++;
      expect(answer.status).toBe(200);
      expect(answer.body.data.acked).toHaveLength(claimed.length);
      expect(answer.body.data.acked.every((r: { ok: boolean; status: string }) => r.ok && r.status === 'acked')).toBe(true);
      claimed = answer.body.data.claimed;
      for (const next of claimed) expect(new Date((next as unknown as { leaseExpiresAt: string }).leaseExpiresAt).getTime() - clock.now().getTime()).toBe(45_000);
    }
    expect(seen).toEqual(Array.from({ length: 25 }, (_, n) => n));
    expect(requests).toBe(3);
    expect(await stats(queueId)).toMatchObject({ depth: { ready: 0, leased: 0, acked: 25 } });
  });

  it('answers each lease on its own, and refuses an unknown or foreign queue with 404 after the acks were made', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, [{ payload: { n: 1 } }, { payload: { n: 2 } }]);
    const [first, second] = await claimMany(queueId, 2);
    const mixed = await call('POST', `/v1/event-queues/${queueId}/ack-and-claim`, {
      leases: [
        { eventId: first!.event.id, leaseToken: 'not-the-token' },
        { eventId: second!.event.id, leaseToken: second!.leaseToken },
      ],
      maxEvents: 5,
    });
    expect(mixed.status).toBe(200);
    expect(mixed.body.data.acked).toMatchObject([{ eventId: first!.event.id, ok: false, error: { reason: 'lease_token_mismatch' } }, { eventId: second!.event.id, ok: true }]);
    expect(mixed.body.data.claimed).toEqual([]);

    const bobs = (await call('POST', '/v1/event-queues', { name: 'bob-ack-and-claim' }, otherKey)).body.data.id;
    const refused = await call('POST', `/v1/event-queues/${bobs}/ack-and-claim`, { leases: [{ eventId: first!.event.id, leaseToken: first!.leaseToken }], maxEvents: 1 });
    expect(refused.status).toBe(404);
    expect((await call('GET', `/v1/events/${first!.event.id}`)).body.data.status).toBe('acked');
  });

  const ackAndClaim = async (queueId: string, leases: Claimed[], maxEvents: number, extra: Record<string, unknown> = {}) => {
    const answer = await call('POST', `/v1/event-queues/${queueId}/ack-and-claim`, { leases: leases.map((c) => ({ eventId: c.event.id, leaseToken: c.leaseToken })), maxEvents, ...extra });
    expect(answer.status).toBe(200);
    return answer.body.data as { acked: { eventId: string; ok: boolean; status?: string; error?: { reason: string } }[]; claimed: Claimed[] };
  };

  it('refuses an ack of a lapsed lease taken over by another consumer, and never hands back what it acked', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, Array.from({ length: 3 }, (_, n) => ({ payload: { n } })));
    const [lapsed, held] = await claimMany(queueId, 2, { leaseSeconds: 10 });
    const [kept] = await claimMany(queueId, 1, { leaseSeconds: 60 });
    clock.advance(11_000);
    await publishMany(queueId, [{ payload: { n: 3 } }]);
    // Another consumer takes the lapsed leases over (counted as lease expiries by the same statement).
    const takenOver = await claimMany(queueId, 2, { leaseSeconds: 60 });
    expect(takenOver.map((c) => c.event.id)).toEqual([lapsed!.event.id, held!.event.id]);
    expect((await stats(queueId)).leaseExpiries).toBe(2);
    const answer = await ackAndClaim(queueId, [lapsed!, kept!], 10);
    expect(answer.acked).toMatchObject([
      { eventId: lapsed!.event.id, ok: false, error: { reason: 'lease_token_mismatch' } },
      { eventId: kept!.event.id, ok: true, status: 'acked' },
    ]);
    // Only the fourth event was claimable: neither the event just acked nor the other consumer's leases.
    expect(answer.claimed.map((c) => c.event.payload.n)).toEqual([3]);
    expect((await call('GET', `/v1/events/${lapsed!.event.id}`)).body.data).toMatchObject({ status: 'leased', attempts: 2 });
    expect(await stats(queueId)).toMatchObject({ depth: { leased: 3, acked: 1 }, leaseExpiries: 2 });
  });

  it('answers a lapsed lease named in the acks as expired, and claims it as a takeover, counted once', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, [{ payload: { n: 0 } }, { payload: { n: 1 } }]);
    const [late, onTime] = await claimMany(queueId, 2, { leaseSeconds: 10 });
    clock.advance(9_000);
    expect((await call('POST', `/v1/events/${onTime!.event.id}/heartbeat`, { leaseToken: onTime!.leaseToken, leaseSeconds: 60 })).status).toBe(200);
    clock.advance(2_000);
    await publishMany(queueId, [{ payload: { n: 2 } }]);
    // One statement acks and claims: it leaves the event it was asked to ack (n 0) to the next claim.
    const answer = await ackAndClaim(queueId, [late!, onTime!], 1);
    expect(answer.acked).toMatchObject([
      { eventId: late!.event.id, ok: false, error: { reason: 'lease_expired' } },
      { eventId: onTime!.event.id, ok: true, status: 'acked' },
    ]);
    expect(answer.claimed.map((c) => c.event.payload.n)).toEqual([2]);
    expect((await stats(queueId)).leaseExpiries).toBe(0);
    const next = await ackAndClaim(queueId, answer.claimed, 10);
    expect(next.acked).toMatchObject([{ ok: true, status: 'acked' }]);
    expect(next.claimed.map((c) => c.event.id)).toEqual([late!.event.id]);
    expect(next.claimed[0]!.event.attempts).toBe(2);
    expect((await stats(queueId)).leaseExpiries).toBe(1);
  });

  it('waits for work when nothing is claimable after the acks (long poll), and wakes on a publish', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, [{ payload: { n: 0 } }]);
    const [only] = await claimMany(queueId, 1);
    const waiting = ackAndClaim(queueId, [only!], 5, { waitSeconds: 5 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await publishMany(queueId, [{ payload: { n: 1 } }]);
    const answer = await waiting;
    expect(answer.acked).toMatchObject([{ eventId: only!.event.id, ok: true }]);
    expect(answer.claimed.map((c) => c.event.payload.n)).toEqual([1]);
  });

  it('refuses a body out of bounds with 400, changing nothing', async () => {
    const queueId = await newQueue();
    await publishMany(queueId, [{ payload: { n: 1 } }]);
    const [leased] = await claimMany(queueId, 1);
    const lease = { eventId: leased!.event.id, leaseToken: leased!.leaseToken };
    for (const body of [{ leases: [lease], maxEvents: 0 }, { leases: [lease], maxEvents: 101 }, { leases: [], maxEvents: 1 }, { leases: [lease] }, { leases: [lease], maxEvents: 1, waitSeconds: 31 }]) {
      const answer = await call('POST', `/v1/event-queues/${queueId}/ack-and-claim`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
    }
    expect((await call('GET', `/v1/events/${leased!.event.id}`)).body.data.status).toBe('leased');
  });
});
