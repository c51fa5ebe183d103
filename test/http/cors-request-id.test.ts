// A browser page may send its own X-Request-Id (the preflight allows it) and read the one every answer
// carries (exposed), over real HTTP against the api origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp({ roles: ['api'] });
}, 120_000);
afterAll(async () => app?.close());

const split = (header: string | null) => (header ?? '').split(',').map((name) => name.trim().toLowerCase());

describe('CORS and x-request-id', () => {
  it('lets a page send x-request-id (preflight) and read it back (exposed), with its id adopted', async () => {
    const preflight = await fetch(`${app.urls.api}/health`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-request-id' },
    });
    expect(preflight.status).toBe(204);
    expect(split(preflight.headers.get('access-control-allow-headers'))).toContain('x-request-id');

    const answer = await fetch(`${app.urls.api}/health`, { headers: { origin: 'https://shop.example', 'x-request-id': 'page-trace-1' } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    expect(split(answer.headers.get('access-control-expose-headers'))).toContain('x-request-id');
    expect(answer.headers.get('x-request-id')).toBe('page-trace-1');
  });
});
