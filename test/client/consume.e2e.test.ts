// The client's queue consumer against a real listener: one request per event (ack-and-next), a throwing handler's
// event nacked and delivered again, every event acked once, and an abort that ends a waiting claim at once.
import { ConsumeError, consumeQueue, createTollgateClient, type QueueEvent } from '@tollgate/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
});
afterAll(async () => app?.close());

/** A project key's client that counts the requests it sends, by path. */
async function projectClient() {
  const user = createTollgateClient({ baseUrl: app.urls.api, token: await app.identityToken(`consumer-${Math.random()}`) });
  const project = await user.POST('/v1/projects', { body: { name: 'consumer' } });
  expect(project.response.status, JSON.stringify(project.error)).toBe(201);
  const requests: string[] = [];
  const counting: typeof fetch = async (input, init) => {
    requests.push(new URL(input instanceof Request ? input.url : String(input)).pathname);
    return fetch(input, init);
  };
  const client = createTollgateClient({ baseUrl: app.urls.api, token: project.data!.data.apiKey.secret, fetch: counting });
  const queue = await client.POST('/v1/event-queues', { body: { name: 'work' } });
  // Says why when it fails (it once answered no data on a loaded machine).
  expect(queue.response.status, JSON.stringify(queue.error)).toBe(201);
  return { client, requests, queueId: queue.data!.data.id };
}

describe('consumeQueue', () => {
  it('makes one request per event, retries what the handler threw on, and acks every event once', async () => {
    const { client, requests, queueId } = await projectClient();
    const total = 20;
    await client.POST('/v1/event-queues/{queueId}/events/batch', { params: { path: { queueId } }, body: { events: Array.from({ length: total }, (_, n) => ({ payload: { n } })) } });
    requests.length = 0;

    const stop = new AbortController();
    const seen: number[] = [];
    const done = new Set<number>();
    const result = await consumeQueue(
      client,
      queueId,
      (event: QueueEvent) => {
        const n = event.payload.n as number;
        seen.push(n);
        if (n === 7 && event.attempts === 1) throw new Error('first try of 7 fails');
        done.add(n);
        if (done.size === total) stop.abort();
      },
      { waitSeconds: 1, retryDelaySeconds: 0, signal: stop.signal },
    );

    expect(result).toEqual({ acked: total, nacked: 1, lost: 0 });
    expect(seen.filter((n) => n === 7)).toHaveLength(2);
    expect([...done].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, n) => n));
    // One claim to start, then each ack or nack claims the next: 21 deliveries, 22 requests.
    expect(requests.filter((path) => path.endsWith('/claim'))).toHaveLength(1);
    expect(requests).toHaveLength(1 + total + 1);
    const stats = await client.GET('/v1/event-queues/{queueId}/stats', { params: { path: { queueId } } });
    expect(stats.data!.data.depth).toMatchObject({ ready: 0, leased: 0, acked: total });
  });

  it('counts an event whose lease ran out under the handler as lost, and takes it again', async () => {
    const { client, queueId } = await projectClient();
    await client.POST('/v1/event-queues/{queueId}/events', { params: { path: { queueId } }, body: { payload: { slow: true } } });
    const stop = new AbortController();
    const attempts: number[] = [];
    const result = await consumeQueue(
      client,
      queueId,
      async (event) => {
        attempts.push(event.attempts);
        if (event.attempts === 1) await new Promise((resolve) => setTimeout(resolve, 5_500));
        else stop.abort();
      },
      { leaseSeconds: 5, waitSeconds: 1, signal: stop.signal },
    );
    expect(result).toEqual({ acked: 1, nacked: 0, lost: 1 });
    expect(attempts).toEqual([1, 2]);
  }, 20_000);

  it('stops at once when aborted while waiting on an empty queue', async () => {
    const { client, queueId } = await projectClient();
    const stop = new AbortController();
    const started = Date.now();
    const consuming = consumeQueue(client, queueId, () => undefined, { waitSeconds: 30, signal: stop.signal });
    setTimeout(() => stop.abort(), 300);
    expect(await consuming).toEqual({ acked: 0, nacked: 0, lost: 0 });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('rejects with the status and error body of a call it cannot go on from', async () => {
    const { client } = await projectClient();
    const failed = await consumeQueue(client, '00000000-0000-4000-8000-000000000000', () => undefined, { waitSeconds: 0 }).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(ConsumeError);
    expect(failed).toMatchObject({ status: 404 });
  });
});
