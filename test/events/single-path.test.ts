import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { createProjectKey } from './harness.js';

// The single-event path (publish one, claim one, ack one) over HTTP, counted at the driver: every
// statement the process sends to the database while one request runs. The API role only, so no
// background loop adds statements of its own.

let app: TestApp;
let key: string;
const sent: string[] = [];
const restore: Array<() => void> = [];

/** Records the text of every statement sent through the driver in use (PGlite, or node-postgres clients, pools included). */
function countStatements() {
  for (const proto of [pg.Client.prototype, PGlite.prototype] as Array<{ query: (...args: unknown[]) => unknown }>) {
    const original = proto.query;
    proto.query = function (this: unknown, ...args: unknown[]) {
      const [first] = args;
      sent.push(typeof first === 'string' ? first : ((first as { text?: string })?.text ?? ''));
      return original.apply(this, args);
    };
    restore.push(() => (proto.query = original));
  }
}

beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
  key = await createProjectKey(app, 'single-path');
  countStatements();
});
afterAll(async () => {
  for (const undo of restore) undo();
  await app?.close();
});

async function post(url: string, body: unknown) {
  const response = await app.origins.api!.inject({ method: 'POST', url, headers: { authorization: `Bearer ${key}` }, payload: body as Record<string, unknown> });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json().data;
}

/** The statements one request sent, split into those on the Events tables and the rest (authentication, NOTIFY). */
async function statementsOf(request: () => Promise<unknown>) {
  sent.length = 0;
  const result = await request();
  const events = sent.filter((text) => /\b(events|event_queues|event_queue_counts)\b/.test(text));
  return { result, events, others: sent.filter((text) => !events.includes(text)) };
}

describe('the single-event path', () => {
  it('publish, claim and ack each run one statement on the Events tables', async () => {
    const queue = await post('/v1/event-queues', { name: 'single-path', defaultLeaseSeconds: 60 });
    // Twice: the second round runs with everything warm (prepared statements, caches).
    for (let round = 0; round < 2; round++) {
      const published = await statementsOf(() => post(`/v1/event-queues/${queue.id}/events`, { payload: { round } }));
      const claimed = await statementsOf(() => post(`/v1/event-queues/${queue.id}/claim`, {}));
      const claim = claimed.result as { event: { id: string }; leaseToken: string };
      const acked = await statementsOf(() => post(`/v1/events/${claim.event.id}/ack`, { leaseToken: claim.leaseToken }));
      expect((acked.result as { status: string }).status).toBe('acked');

      expect([published.events.length, claimed.events.length, acked.events.length], JSON.stringify({ published, claimed, acked })).toEqual([1, 1, 1]);
      // Besides the project-key lookup, nothing else: at most the publish's wake-up NOTIFY to other nodes (PostgreSQL).
      for (const { others } of [claimed, acked]) expect(others.length, others.join('\n')).toBeLessThanOrEqual(1);
      expect(published.others.filter((text) => !/pg_notify/.test(text)).length, published.others.join('\n')).toBeLessThanOrEqual(1);
    }
  });
});
