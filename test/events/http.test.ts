import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createProjectKey } from './harness.js';

let app: TestApp;
let key: string;
let otherKey: string;
const clock = new ManualClock();

beforeAll(async () => {
  app = await buildTestApp({ clock });
  key = await createProjectKey(app, 'events-alice');
  otherKey = await createProjectKey(app, 'events-bob');
});
afterAll(async () => {
  await app?.close();
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
async function call(method: Method, url: string, body?: unknown, credential: string | null = key) {
  const response = await app.origins.api!.inject({
    method,
    url,
    headers: credential ? { authorization: `Bearer ${credential}` } : {},
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
  });
  return { status: response.statusCode, body: response.json() };
}

let queues = 0;
async function newQueue(settings: Record<string, unknown> = {}) {
  const created = await call('POST', '/v1/event-queues', { name: `queue-${++queues}`, ...settings });
  expect(created.status).toBe(201);
  return created.body.data as { id: string; name: string; defaultLeaseSeconds: number; maxAttempts: number };
}

async function publish(queueId: string, body: Record<string, unknown> = { payload: { hello: 'world' } }) {
  const published = await call('POST', `/v1/event-queues/${queueId}/events`, body);
  expect(published.status).toBe(201);
  return published.body.data as { id: string };
}

async function claim(queueId: string, body: Record<string, unknown> = {}) {
  const claimed = await call('POST', `/v1/event-queues/${queueId}/claim`, body);
  expect(claimed.status).toBe(200);
  return claimed.body.data as { event: { id: string; attempts: number; status: string }; leaseToken: string; leaseExpiresAt: string } | null;
}

describe('event queues over HTTP', () => {
  it('creates a queue: 201 in the envelope with message "Event queue created" and documented defaults', async () => {
    const created = await call('POST', '/v1/event-queues', { name: 'orders', defaultLeaseSeconds: 45, maxAttempts: 7 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      code: 0,
      message: 'Event queue created',
      data: { name: 'orders', status: 'active', defaultLeaseSeconds: 45, maxAttempts: 7 },
    });
    expect(created.body.data.id).toMatch(/^[0-9a-f-]{36}$/);
    const defaults = await call('POST', '/v1/event-queues', { name: 'defaults' });
    expect(defaults.body.data).toMatchObject({ defaultLeaseSeconds: 30, maxAttempts: 5, retentionSeconds: 7 * 24 * 3600 });
    const kept = await call('POST', '/v1/event-queues', { name: 'kept an hour', retentionSeconds: 3600 });
    expect(kept.body.data).toMatchObject({ retentionSeconds: 3600 });

    const duplicate = await call('POST', '/v1/event-queues', { name: 'orders' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toMatchObject({ code: 1005, data: { reason: 'queue_name_taken', queueId: created.body.data.id } });
    // Names are per project.
    expect((await call('POST', '/v1/event-queues', { name: 'orders' }, otherKey)).status).toBe(201);
  });

  it('validates bounds: 400 with details', async () => {
    for (const body of [
      {},
      { name: '' },
      { name: 'x'.repeat(201) },
      { name: 'a', defaultLeaseSeconds: 4 },
      { name: 'a', defaultLeaseSeconds: 3601 },
      { name: 'a', defaultLeaseSeconds: 10.5 },
      { name: 'a', maxAttempts: 0 },
      { name: 'a', maxAttempts: 101 },
      { name: 'a', retentionSeconds: 59 },
      { name: 'a', retentionSeconds: 90 * 24 * 3600 + 1 },
      { name: 'a', retentionSeconds: 60.5 },
    ]) {
      const response = await call('POST', '/v1/event-queues', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe(1000);
      expect(Array.isArray(response.body.data)).toBe(true);
    }
  });

  it('lists, gets and deletes queues of the key\'s project only', async () => {
    const queue = await newQueue();
    const list = await call('GET', '/v1/event-queues');
    expect(list.body.data.map((q: { id: string }) => q.id)).toContain(queue.id);
    expect((await call('GET', '/v1/event-queues', undefined, otherKey)).body.data.map((q: { id: string }) => q.id)).not.toContain(queue.id);
    expect((await call('GET', `/v1/event-queues/${queue.id}`)).body.data).toMatchObject({ id: queue.id, name: queue.name });

    for (const [method, url, body] of [
      ['GET', `/v1/event-queues/${queue.id}`],
      ['DELETE', `/v1/event-queues/${queue.id}`],
      ['POST', `/v1/event-queues/${queue.id}/events`, { payload: {} }],
      ['POST', `/v1/event-queues/${queue.id}/claim`, {}],
      ['GET', `/v1/event-queues/${queue.id}/dead-events`],
    ] as Array<[Method, string, unknown?]>) {
      const response = await call(method, url, body, otherKey);
      expect(response.status, `${method} ${url}`).toBe(404);
      expect(response.body).toMatchObject({ code: 1004, data: { reason: 'queue_not_found' } });
    }
    expect((await call('GET', '/v1/event-queues/not-a-uuid')).status).toBe(404);

    const event = await publish(queue.id);
    const deleted = await call('DELETE', `/v1/event-queues/${queue.id}`);
    expect(deleted.body).toMatchObject({ code: 0, data: { id: queue.id, deleted: true } });
    expect((await call('GET', `/v1/event-queues/${queue.id}`)).status).toBe(404);
    expect((await call('GET', `/v1/events/${event.id}`)).status).toBe(404);
  });

  it('changes the retention of a queue (PATCH, extension); nothing else changes', async () => {
    const queue = await newQueue({ defaultLeaseSeconds: 40 });
    const changed = await call('PATCH', `/v1/event-queues/${queue.id}`, { retentionSeconds: 60 });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ code: 0, message: 'Event queue updated', data: { id: queue.id, retentionSeconds: 60, defaultLeaseSeconds: 40 } });
    expect((await call('GET', `/v1/event-queues/${queue.id}`)).body.data.retentionSeconds).toBe(60);

    for (const body of [{}, { retentionSeconds: 59 }, { retentionSeconds: 60, maxAttempts: 3 }, { retentionSeconds: '60' }]) {
      const refused = await call('PATCH', `/v1/event-queues/${queue.id}`, body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.code).toBe(1000);
    }
    for (const [url, credential] of [
      [`/v1/event-queues/${queue.id}`, otherKey],
      ['/v1/event-queues/not-a-uuid', key],
      ['/v1/event-queues/019cbb4b-4c00-7000-8000-000000000000', key],
    ]) {
      const missing = await call('PATCH', url, { retentionSeconds: 60 }, credential);
      expect(missing.status, url).toBe(404);
      expect(missing.body).toMatchObject({ code: 1004, data: { reason: 'queue_not_found' } });
    }
  });

  it('answers 401 without a valid project key on every events endpoint', async () => {
    const id = '019cbb4b-4c00-7000-8000-000000000000';
    const endpoints: Array<[Method, string, unknown?]> = [
      ['POST', '/v1/event-queues', { name: 'x' }],
      ['GET', '/v1/event-queues'],
      ['GET', `/v1/event-queues/${id}`],
      ['DELETE', `/v1/event-queues/${id}`],
      ['PATCH', `/v1/event-queues/${id}`, { retentionSeconds: 60 }],
      ['POST', `/v1/event-queues/${id}/events`, { payload: {} }],
      ['POST', `/v1/event-queues/${id}/claim`, {}],
      ['GET', `/v1/event-queues/${id}/dead-events`],
      ['POST', `/v1/event-queues/${id}/dead-events/redrive`, { all: true }],
      ['GET', `/v1/event-queues/${id}/stats`],
      ['POST', `/v1/event-queues/${id}/events/batch`, { events: [{ payload: {} }] }],
      ['POST', '/v1/events/ack', { leases: [{ eventId: id, leaseToken: 't' }] }],
      ['POST', '/v1/events/nack', { leases: [{ eventId: id, leaseToken: 't' }] }],
      ['POST', `/v1/schedules/${id}/pause`],
      ['POST', `/v1/schedules/${id}/resume`],
      ['POST', `/v1/events/${id}/heartbeat`, { leaseToken: 't' }],
      ['POST', `/v1/events/${id}/ack`, { leaseToken: 't' }],
      ['POST', `/v1/events/${id}/nack`, { leaseToken: 't' }],
      ['GET', `/v1/events/${id}`],
      ['POST', '/v1/schedules', {}],
      ['GET', '/v1/schedules'],
      ['GET', `/v1/schedules/${id}`],
      ['DELETE', `/v1/schedules/${id}`],
    ];
    for (const [method, url, body] of endpoints) {
      for (const credential of [null, 'svc_api_not-a-real-key', await app.identityToken('events-alice')]) {
        const response = await call(method, url, body, credential);
        expect(response.status, `${method} ${url}`).toBe(401);
        expect(response.body).toMatchObject({ code: 1001, data: null });
      }
    }
  });

  it('documents every events route in /openapi.json', async () => {
    const spec = (await app.origins.api!.inject({ method: 'GET', url: '/openapi.json' })).json();
    for (const path of [
      '/v1/event-queues',
      '/v1/event-queues/{queueId}',
      '/v1/event-queues/{queueId}/events',
      '/v1/event-queues/{queueId}/claim',
      '/v1/event-queues/{queueId}/dead-events',
      '/v1/event-queues/{queueId}/dead-events/redrive',
      '/v1/event-queues/{queueId}/stats',
      '/v1/event-queues/{queueId}/events/batch',
      '/v1/events/ack',
      '/v1/events/nack',
      '/v1/schedules/{scheduleId}/pause',
      '/v1/schedules/{scheduleId}/resume',
      '/v1/events/{eventId}',
      '/v1/events/{eventId}/heartbeat',
      '/v1/events/{eventId}/ack',
      '/v1/events/{eventId}/nack',
      '/v1/schedules',
      '/v1/schedules/{scheduleId}',
    ]) {
      expect(spec.paths[path], path).toBeDefined();
    }
    expect(spec.paths['/v1/event-queues/{queueId}'].patch).toBeDefined();
  });
});

describe('publishing and consuming over HTTP', () => {
  it('publishes (201), deduplicates (200, same event) and bounds payloads', async () => {
    const queue = await newQueue();
    const first = await call('POST', `/v1/event-queues/${queue.id}/events`, { payload: { order: 1 }, deduplicationKey: 'order-1' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      code: 0,
      data: { queueId: queue.id, scheduleId: null, status: 'available', attempts: 0, payload: { order: 1 }, deduplicationKey: 'order-1', lastError: null },
    });
    const repeat = await call('POST', `/v1/event-queues/${queue.id}/events`, { payload: { order: 2 }, deduplicationKey: 'order-1' });
    expect(repeat.status).toBe(200);
    expect(repeat.body.data).toMatchObject({ id: first.body.data.id, payload: { order: 1 } });

    for (const body of [{}, { payload: [1, 2] }, { payload: 'text' }, { payload: {}, delaySeconds: -1 }, { payload: {}, deduplicationKey: '' }]) {
      expect((await call('POST', `/v1/event-queues/${queue.id}/events`, body)).status, JSON.stringify(body)).toBe(400);
    }
    const large = await call('POST', `/v1/event-queues/${queue.id}/events`, { payload: { blob: 'x'.repeat(70_000) } });
    expect(large.status).toBe(413);
    expect(large.body).toMatchObject({ code: 1007, data: { reason: 'payload_too_large', limitBytes: 65536 } });
  });

  it('claims (null when empty), heartbeats, acks; stale tokens get 409 with a reason', async () => {
    const queue = await newQueue({ defaultLeaseSeconds: 30, maxAttempts: 3 });
    expect(await claim(queue.id)).toBeNull();
    // No body at all is a valid claim too.
    const bare = await app.origins.api!.inject({ method: 'POST', url: `/v1/event-queues/${queue.id}/claim`, headers: { authorization: `Bearer ${key}` } });
    expect(bare.statusCode).toBe(200);
    expect(bare.json()).toMatchObject({ code: 0, data: null });

    const event = await publish(queue.id, { payload: { n: 1 } });
    const claimed = (await claim(queue.id, { leaseSeconds: 20 }))!;
    expect(claimed.event).toMatchObject({ id: event.id, status: 'leased', attempts: 1 });
    expect(Date.parse(claimed.leaseExpiresAt) - clock.now().getTime()).toBe(20_000);
    expect(await claim(queue.id)).toBeNull();

    const wrongToken = await call('POST', `/v1/events/${event.id}/ack`, { leaseToken: 'forged' });
    expect(wrongToken.status).toBe(409);
    expect(wrongToken.body).toMatchObject({ code: 1005, data: { reason: 'lease_token_mismatch' } });

    clock.advance(15_000);
    const beat = await call('POST', `/v1/events/${event.id}/heartbeat`, { leaseToken: claimed.leaseToken, leaseSeconds: 60 });
    expect(beat.status).toBe(200);
    expect(Date.parse(beat.body.data.leaseExpiresAt) - clock.now().getTime()).toBe(60_000);
    clock.advance(30_000); // past the first lease, inside the extended one
    expect(await claim(queue.id)).toBeNull();

    const acked = await call('POST', `/v1/events/${event.id}/ack`, { leaseToken: claimed.leaseToken });
    expect(acked.body).toMatchObject({ code: 0, data: { id: event.id, status: 'acked', leaseExpiresAt: null } });
    const again = await call('POST', `/v1/events/${event.id}/heartbeat`, { leaseToken: claimed.leaseToken });
    expect(again.body).toMatchObject({ code: 1005, data: { reason: 'lease_released', status: 'acked' } });
    expect((await call('GET', `/v1/events/${event.id}`)).body.data.status).toBe('acked');
    expect((await call('GET', `/v1/events/${event.id}`, undefined, otherKey)).status).toBe(404);

    // An expired lease: the old token is refused, the event is delivered again.
    const second = await publish(queue.id);
    const lease = (await claim(queue.id))!;
    clock.advance(30_000);
    const late = await call('POST', `/v1/events/${second.id}/ack`, { leaseToken: lease.leaseToken });
    expect(late.body).toMatchObject({ code: 1005, data: { reason: 'lease_expired' } });
    const redelivered = (await claim(queue.id))!;
    expect(redelivered.event).toMatchObject({ id: second.id, attempts: 2 });
    const stale = await call('POST', `/v1/events/${second.id}/ack`, { leaseToken: lease.leaseToken });
    expect(stale.body).toMatchObject({ code: 1005, data: { reason: 'lease_token_mismatch' } });
  });

  it('nack retries with backoff, then the event is dead and listed', async () => {
    const queue = await newQueue({ maxAttempts: 2 });
    const event = await publish(queue.id);
    const first = (await claim(queue.id))!;
    const retried = await call('POST', `/v1/events/${event.id}/nack`, { leaseToken: first.leaseToken, error: 'upstream 503' });
    expect(retried.body.data).toMatchObject({ status: 'available', attempts: 1, lastError: 'upstream 503' });
    expect(Date.parse(retried.body.data.availableAt) - clock.now().getTime()).toBe(2_000);
    expect(await claim(queue.id)).toBeNull();
    clock.advance(2_000);
    const second = (await claim(queue.id))!;
    const dead = await call('POST', `/v1/events/${event.id}/nack`, { leaseToken: second.leaseToken, error: 'still failing', retryDelaySeconds: 0 });
    expect(dead.body.data).toMatchObject({ status: 'dead', attempts: 2, lastError: 'still failing' });
    const listed = await call('GET', `/v1/event-queues/${queue.id}/dead-events?limit=10`);
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([event.id]);
    for (const query of ['limit=0', 'limit=101', 'before=nope']) {
      expect((await call('GET', `/v1/event-queues/${queue.id}/dead-events?${query}`)).status, query).toBe(400);
    }
    for (const body of [{}, { leaseToken: '' }, { leaseToken: 'x', retryDelaySeconds: -1 }, { leaseToken: 'x', error: 'e'.repeat(2001) }]) {
      expect((await call('POST', `/v1/events/${event.id}/nack`, body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('the worker purges finished events once the queue retention has passed; stats follow', async () => {
    const queue = await newQueue({ retentionSeconds: 60 });
    const event = await publish(queue.id);
    const claimed = (await claim(queue.id))!;
    expect((await call('POST', `/v1/events/${event.id}/ack`, { leaseToken: claimed.leaseToken })).status).toBe(200);
    const waiting = await publish(queue.id);
    expect((await call('GET', `/v1/event-queues/${queue.id}/stats`)).body.data.depth).toMatchObject({ ready: 1, acked: 1 });

    clock.advance(61_000);
    // The leader loop `events.retention` runs every 5 s.
    let status = 200;
    for (let i = 0; i < 150 && status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await call('GET', `/v1/events/${event.id}`)).status;
    }
    expect(status).toBe(404);
    expect((await call('GET', `/v1/events/${waiting.id}`)).status).toBe(200);
    expect((await call('GET', `/v1/event-queues/${queue.id}/stats`)).body.data.depth).toMatchObject({ ready: 1, acked: 0 });
  });

  it('validates claim and heartbeat bounds', async () => {
    const queue = await newQueue();
    for (const body of [{ leaseSeconds: 4 }, { leaseSeconds: 3601 }, { waitSeconds: -1 }, { waitSeconds: 31 }, { waitSeconds: 1.5 }]) {
      const response = await call('POST', `/v1/event-queues/${queue.id}/claim`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.code).toBe(1000);
    }
    const id = '019cbb4b-4c00-7000-8000-000000000000';
    expect((await call('POST', `/v1/events/${id}/heartbeat`, { leaseToken: 't', leaseSeconds: 3601 })).status).toBe(400);
    expect((await call('POST', `/v1/events/${id}/heartbeat`, { leaseToken: 't' })).status).toBe(404);
  });
});

describe('long polling over real HTTP', () => {
  const post = (path: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${app.urls.api}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal,
    });

  it('wakes a waiting claim as soon as an event is published', async () => {
    const queue = await newQueue();
    const started = Date.now();
    const waiting = post(`/v1/event-queues/${queue.id}/claim`, { waitSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const published = await post(`/v1/event-queues/${queue.id}/events`, { payload: { wake: true } });
    const publishedAt = Date.now();
    expect(published.status).toBe(201);
    const response = await waiting;
    const body = (await response.json()) as { data: { event: { payload: unknown } } };
    expect(body.data.event.payload).toEqual({ wake: true });
    expect(Date.now() - publishedAt).toBeLessThan(1000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('answers data null after waitSeconds when nothing comes', async () => {
    const queue = await newQueue();
    const started = Date.now();
    const response = await post(`/v1/event-queues/${queue.id}/claim`, { waitSeconds: 1 });
    const elapsed = Date.now() - started;
    expect(await response.json()).toMatchObject({ code: 0, data: null });
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(3000);
  });

  it('a claimer that hung up gets nothing: the next event goes to the next claimer on its first attempt', async () => {
    const queue = await newQueue();
    const controller = new AbortController();
    const gone = post(`/v1/event-queues/${queue.id}/claim`, { waitSeconds: 10 }, controller.signal).catch(() => null);
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    await gone;
    await new Promise((resolve) => setTimeout(resolve, 200));
    await publish(queue.id);
    const next = (await claim(queue.id))!;
    expect(next.event.attempts).toBe(1);
  });

  it("another project's claim on a queue with waiting claimers is refused at once (404)", async () => {
    const queue = await newQueue();
    const waiting = post(`/v1/event-queues/${queue.id}/claim`, { waitSeconds: 10 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const intruder = await app.origins.api!.inject({
      method: 'POST',
      url: `/v1/event-queues/${queue.id}/claim`,
      headers: { authorization: `Bearer ${otherKey}` },
      payload: { waitSeconds: 5 },
    });
    expect(intruder.statusCode).toBe(404);
    expect(Date.now() - started).toBeLessThan(1000);
    await publish(queue.id);
    expect(((await (await waiting).json()) as { data: unknown }).data).not.toBeNull();
  });

  it('serves waiting claimers in arrival order', async () => {
    const queue = await newQueue();
    const order: number[] = [];
    const waiting = [0, 1, 2].map(async (index) => {
      await new Promise((resolve) => setTimeout(resolve, index * 100));
      const response = await post(`/v1/event-queues/${queue.id}/claim`, { waitSeconds: 10 });
      const body = (await response.json()) as { data: { event: { payload: { n: number } } } };
      order.push(index);
      return body.data.event.payload.n as number;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let n = 0; n < 3; n++) {
      await publish(queue.id, { payload: { n } });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await Promise.all(waiting)).toEqual([0, 1, 2]);
    expect(order).toEqual([0, 1, 2]);
  });
});

describe('schedules over HTTP', () => {
  const body = (queueId: string, overrides: Record<string, unknown> = {}) => ({
    queueId,
    externalId: 'nightly-report',
    name: 'Nightly report',
    schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'America/New_York' },
    payload: { report: 'daily' },
    overlapPolicy: 'latest',
    maxConcurrency: 1,
    maxEventAgeSeconds: 3600,
    ...overrides,
  });

  it('accepts a schedule while pending, is idempotent on externalId, gets, lists and deletes', async () => {
    const queue = await newQueue();
    const created = await call('POST', '/v1/schedules', body(queue.id));
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      code: 0,
      message: 'Schedule created',
      data: {
        queueId: queue.id,
        externalId: 'nightly-report',
        schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'America/New_York' },
        payload: { report: 'daily' },
        overlapPolicy: 'latest',
        maxConcurrency: 1,
        maxEventAgeSeconds: 3600,
        sync: { status: 'pending', revision: 1, syncedRevision: null, lastError: null },
      },
    });
    const id = created.body.data.id as string;

    const same = await call('POST', '/v1/schedules', body(queue.id));
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ message: 'Schedule unchanged', data: { id, sync: { revision: 1 } } });
    const updated = await call('POST', '/v1/schedules', body(queue.id, { payload: { report: 'weekly' } }));
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ message: 'Schedule updated', data: { id, sync: { status: 'pending', revision: 2 } } });

    expect((await call('GET', `/v1/schedules/${id}`)).body.data).toMatchObject({ id, payload: { report: 'weekly' } });
    expect((await call('GET', '/v1/schedules')).body.data.map((s: { id: string }) => s.id)).toContain(id);
    expect((await call('GET', `/v1/schedules?queueId=${queue.id}`)).body.data.map((s: { id: string }) => s.id)).toEqual([id]);
    expect((await call('GET', `/v1/schedules/${id}`, undefined, otherKey)).body).toMatchObject({ code: 1004, data: { reason: 'schedule_not_found' } });
    expect((await call('GET', '/v1/schedules', undefined, otherKey)).body.data).toEqual([]);
    expect((await call('DELETE', `/v1/schedules/${id}`, undefined, otherKey)).status).toBe(404);
    // The same externalId in another project is another schedule, and needs a queue of that project.
    expect((await call('POST', '/v1/schedules', body(queue.id), otherKey)).status).toBe(404);

    expect((await call('DELETE', `/v1/schedules/${id}`)).body).toMatchObject({ code: 0, data: { id, deleted: true } });
    expect((await call('GET', `/v1/schedules/${id}`)).status).toBe(404);
  });

  it('rejects bad cron expressions, time zones and bounds with 400', async () => {
    const queue = await newQueue();
    for (const overrides of [
      { schedule: { type: 'cron', expression: '0 9 * *', timezone: 'UTC' } },
      { schedule: { type: 'cron', expression: '0 99 * * *', timezone: 'UTC' } },
      { schedule: { type: 'cron', expression: '0 9 ? * *', timezone: 'UTC' } },
      { schedule: { type: 'cron', expression: '0 9 * * *', timezone: 'America/Atlantis' } },
      { schedule: { type: 'interval', expression: '0 9 * * *', timezone: 'UTC' } },
      { overlapPolicy: 'sometimes' },
      { maxConcurrency: 0 },
      { maxEventAgeSeconds: 0 },
      { externalId: '' },
      { payload: [1] },
    ]) {
      const response = await call('POST', '/v1/schedules', body(queue.id, overrides));
      expect(response.status, JSON.stringify(overrides)).toBe(400);
      expect(response.body.code).toBe(1000);
    }
    const missingQueue = await call('POST', '/v1/schedules', body('019cbb4b-4c00-7000-8000-000000000000'));
    expect(missingQueue.body).toMatchObject({ code: 1004, data: { reason: 'queue_not_found' } });
  });

  it('the worker registers the schedule and fires its ticks into the queue', async () => {
    const queue = await newQueue();
    const created = await call('POST', '/v1/schedules', body(queue.id, { externalId: 'every-minute', schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' } }));
    const id = created.body.data.id as string;
    let schedule = created.body.data;
    for (let i = 0; i < 50 && schedule.sync.status !== 'synced'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      schedule = (await call('GET', `/v1/schedules/${id}`)).body.data;
    }
    expect(schedule.sync).toMatchObject({ status: 'synced', revision: 1, syncedRevision: 1 });
    clock.set(schedule.nextFireAt);
    const claimed = (await claim(queue.id, { waitSeconds: 5 }))!;
    expect(claimed.event).toMatchObject({ scheduleId: id, scheduledFor: schedule.nextFireAt, payload: { report: 'daily' } });
  });
});

describe('ack and nack that claim the next event in the same request (extension)', () => {
  it('ack with next answers the acked event and data.next, the next event claimed as the claim answers it; null when the queue is empty', async () => {
    const queue = await newQueue();
    const [a, b] = [await publish(queue.id, { payload: { n: 1 } }), await publish(queue.id, { payload: { n: 2 } })];
    const first = (await claim(queue.id))!;
    expect(first.event.id).toBe(a.id);

    const acked = await call('POST', `/v1/events/${a.id}/ack`, { leaseToken: first.leaseToken, next: { queueId: queue.id, leaseSeconds: 45 } });
    expect(acked.status).toBe(200);
    expect(acked.body.data).toMatchObject({ id: a.id, status: 'acked', next: { event: { id: b.id, status: 'leased', attempts: 1, payload: { n: 2 } }, leaseToken: expect.any(String) } });
    const next = acked.body.data.next;
    expect(new Date(next.leaseExpiresAt).getTime() - clock.now().getTime()).toBe(45_000);

    // The lease it handed out is a real one: its token acks the event; nothing is left to claim.
    const last = await call('POST', `/v1/events/${b.id}/ack`, { leaseToken: next.leaseToken, next: { queueId: queue.id } });
    expect(last.body.data).toMatchObject({ id: b.id, status: 'acked', next: null });
    // Without next, the answer is the spec's: the event alone.
    expect(Object.keys((await call('GET', `/v1/events/${b.id}`)).body.data)).not.toContain('next');
  });

  it('ack with next under a token that is not the lease: 409 as without next, and nothing is claimed; a repeated ack still claims', async () => {
    const queue = await newQueue();
    const [a, b] = [await publish(queue.id, { payload: { n: 1 } }), await publish(queue.id, { payload: { n: 2 } })];
    const first = (await claim(queue.id))!;
    expect(first.event.id).toBe(a.id);

    const wrong = await call('POST', `/v1/events/${a.id}/ack`, { leaseToken: `${first.leaseToken.slice(0, -1)}${first.leaseToken.endsWith('A') ? 'B' : 'A'}`, next: { queueId: queue.id } });
    expect(wrong.status).toBe(409);
    expect(wrong.body).toMatchObject({ code: 1005, data: { reason: 'lease_token_mismatch' } });
    expect((await call('GET', `/v1/events/${b.id}`)).body.data).toMatchObject({ status: 'available', attempts: 0 });

    const acked = await call('POST', `/v1/events/${a.id}/ack`, { leaseToken: first.leaseToken });
    expect(acked.body.data).toMatchObject({ id: a.id, status: 'acked' });
    // The same ack again (its answer was lost) answers the same, and its next claims as a claim would.
    const again = await call('POST', `/v1/events/${a.id}/ack`, { leaseToken: first.leaseToken, next: { queueId: queue.id } });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: a.id, status: 'acked', next: { event: { id: b.id, status: 'leased', attempts: 1 } } });
  });

  it('ack with next takes over a lease that ran out, counted once in leaseExpiries, beside the ack counted once', async () => {
    const queue = await newQueue();
    const [a, b] = [await publish(queue.id, { payload: { n: 1 } }), await publish(queue.id, { payload: { n: 2 } })];
    const first = (await claim(queue.id, { leaseSeconds: 60 }))!;
    const second = (await claim(queue.id, { leaseSeconds: 5 }))!;
    expect([first.event.id, second.event.id]).toEqual([a.id, b.id]);
    clock.advance(10_000);

    const acked = await call('POST', `/v1/events/${a.id}/ack`, { leaseToken: first.leaseToken, next: { queueId: queue.id } });
    expect(acked.body.data).toMatchObject({ id: a.id, status: 'acked', next: { event: { id: b.id, status: 'leased', attempts: 2 } } });
    const stats = (await call('GET', `/v1/event-queues/${queue.id}/stats`)).body.data;
    expect(stats).toMatchObject({ depth: { ready: 0, leased: 1, acked: 1 }, leaseExpiries: 1 });
  });

  it('nack with next hands out the next event; a next of another project\'s queue is refused like a claim of it, after the nack was made', async () => {
    const queue = await newQueue({ maxAttempts: 3 });
    const event = await publish(queue.id);
    const leased = (await claim(queue.id))!;
    const nacked = await call('POST', `/v1/events/${event.id}/nack`, { leaseToken: leased.leaseToken, retryDelaySeconds: 0, next: { queueId: queue.id } });
    expect(nacked.body.data).toMatchObject({ id: event.id, status: 'available', next: { event: { id: event.id, attempts: 2 } } });

    const bobs = await call('POST', '/v1/event-queues', { name: 'bob-queue' }, otherKey);
    const refused = await call('POST', `/v1/events/${event.id}/ack`, { leaseToken: nacked.body.data.next.leaseToken, next: { queueId: bobs.body.data.id } });
    expect(refused.status).toBe(404);
    expect((await call('GET', `/v1/events/${event.id}`)).body.data.status).toBe('acked');
  });
});
