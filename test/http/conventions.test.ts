import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('HTTP conventions', () => {
  it('answers /health in the envelope with build facts and a request id', async () => {
    const response = await app.origins.api!.inject({ method: 'GET', url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const body = response.json();
    expect(body).toMatchObject({ code: 0, message: 'ok' });
    for (const field of ['commit', 'branch', 'buildTime']) {
      expect(typeof body.data[field]).toBe('string');
      expect(body.data[field].length).toBeGreaterThan(0);
    }
  });
});
