// The typed client (packages/client) against a real listener: a project and its key, a queue, a
// batch publish, a batch claim and a batch ack — every call typed from /openapi.json.
import { createTollgateClient } from '@tollgate/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
});
afterAll(async () => app?.close());

describe('the typed client', () => {
  it('drives projects and event batches over HTTP', async () => {
    const baseUrl = app.urls.api;
    const user = createTollgateClient({ baseUrl, token: await app.identityToken('client-user') });
    const project = await user.POST('/v1/projects', { body: { name: 'typed' } });
    expect(project.response.status).toBe(201);
    const apiKey = project.data!.data.apiKey.secret;

    const client = createTollgateClient({ baseUrl, token: apiKey });
    const queue = await client.POST('/v1/event-queues', { body: { name: 'typed-queue' } });
    expect(queue.response.status).toBe(201);
    const queueId = queue.data!.data.id;

    const published = await client.POST('/v1/event-queues/{queueId}/events/batch', {
      params: { path: { queueId } },
      body: { events: [{ payload: { n: 1 } }, { payload: { n: 2 }, deduplicationKey: 'two' }] },
    });
    expect(published.data!.data.map((item) => item.created)).toEqual([true, true]);

    const claimed = await client.POST('/v1/event-queues/{queueId}/claim', { params: { path: { queueId } }, body: { maxEvents: 10 } });
    const leases = claimed.data!.data as { event: { id: string; payload: Record<string, unknown> }; leaseToken: string }[];
    expect(leases.map((lease) => lease.event.payload.n)).toEqual([1, 2]);

    const acked = await client.POST('/v1/events/ack', { body: { leases: leases.map((l) => ({ eventId: l.event.id, leaseToken: l.leaseToken })) } });
    expect(acked.data!.data.every((result) => result.ok)).toBe(true);

    const stats = await client.GET('/v1/event-queues/{queueId}/stats', { params: { path: { queueId } } });
    expect(stats.data!.data.depth).toMatchObject({ ready: 0, acked: 2 });

    const refused = await createTollgateClient({ baseUrl, token: 'svc_api_wrong' }).GET('/v1/event-queues');
    expect(refused.response.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 1001 });
  });
});
