import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/test-app.js';
import { createProjectKey } from './harness.js';

describe('server shutdown', () => {
  it('answers waiting long polls with data null at once instead of holding the shutdown', async () => {
    const app = await buildTestApp();
    let closed = false;
    try {
      const key = await createProjectKey(app, 'events-shutdown');
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const queue = (await (await fetch(`${app.urls.api}/v1/event-queues`, { method: 'POST', headers, body: JSON.stringify({ name: 'q' }) })).json()) as { data: { id: string } };
      const waiting = fetch(`${app.urls.api}/v1/event-queues/${queue.data.id}/claim`, { method: 'POST', headers, body: JSON.stringify({ waitSeconds: 30 }) });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      await app.close();
      closed = true;
      const response = await waiting;
      expect(await response.json()).toMatchObject({ code: 0, data: null });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      if (!closed) await app.close();
    }
  });
});
