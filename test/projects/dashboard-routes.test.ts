// Routes the dashboard needs beside the spec's: revoking an API key (identity token, owner only, at once),
// a project's event queues with their depth, and the dev issuer's sign-in token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await buildTestApp();
});
afterAll(async () => app?.close());

const call = (method: string, url: string, token?: string, payload?: object) =>
  app.origins.api!.inject({ method: method as 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(payload ? { payload } : {}) });

async function project(user: string) {
  const token = await app.identityToken(user);
  const created = (await call('POST', '/v1/projects', token, { name: `${user}'s` })).json().data;
  return { token, id: created.project.id as string, keyId: created.apiKey.id as string, secret: created.apiKey.secret as string };
}

describe('revoking an API key', () => {
  it('refuses the key at once, answers it revoked again, and is the owner’s alone', async () => {
    const mine = await project('revoker');
    const theirs = await project('bystander');
    expect((await call('GET', '/v1/event-queues', mine.secret)).statusCode).toBe(200);

    expect((await call('DELETE', `/v1/projects/${theirs.id}/api-keys/${theirs.keyId}`, mine.token)).statusCode).toBe(404);
    expect((await call('DELETE', `/v1/projects/${mine.id}/api-keys/${theirs.keyId}`, mine.token)).statusCode).toBe(404);
    expect((await call('GET', '/v1/event-queues', theirs.secret)).statusCode).toBe(200);

    const revoked = await call('DELETE', `/v1/projects/${mine.id}/api-keys/${mine.keyId}`, mine.token);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data).toMatchObject({ id: mine.keyId, status: 'revoked' });
    expect(revoked.body).not.toContain(mine.secret);
    expect((await call('GET', '/v1/event-queues', mine.secret)).statusCode).toBe(401);
    expect((await call('DELETE', `/v1/projects/${mine.id}/api-keys/${mine.keyId}`, mine.token)).json().data.status).toBe('revoked');
    expect((await call('DELETE', `/v1/projects/${mine.id}/api-keys/nope`, mine.token)).statusCode).toBe(400);
    expect((await call('DELETE', `/v1/projects/${mine.id}/api-keys/${mine.keyId}`)).statusCode).toBe(401);
  });
});

describe("a project's event queues for its owner", () => {
  it('lists each queue with its depth by state; 404 for anyone else', async () => {
    const mine = await project('queue-owner');
    const queue = (await call('POST', '/v1/event-queues', mine.secret, { name: 'jobs' })).json().data;
    for (let i = 0; i < 3; i++) await call('POST', `/v1/event-queues/${queue.id}/events`, mine.secret, { payload: { i } });
    await call('POST', `/v1/event-queues/${queue.id}/events`, mine.secret, { payload: { later: true }, delaySeconds: 600 });

    const listed = await call('GET', `/v1/projects/${mine.id}/event-queues`, mine.token);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data).toEqual([
      expect.objectContaining({ id: queue.id, name: 'jobs', depth: { ready: 3, delayed: 1, leased: 0, acked: 0, dead: 0, expired: 0, superseded: 0 } }),
    ]);
    const other = await project('queue-stranger');
    expect((await call('GET', `/v1/projects/${mine.id}/event-queues`, other.token)).statusCode).toBe(404);
    expect((await call('GET', `/v1/projects/${mine.id}/event-queues`, mine.secret)).statusCode).toBe(401);
  });
});

describe('the dev issuer sign-in', () => {
  it('answers a token for a valid name that the identity routes accept, and 400 otherwise', async () => {
    const answer = await call('POST', '/dev/identity/token', undefined, { sub: 'erin@example' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    const { token, sub, expiresAt } = answer.json();
    expect(sub).toBe('erin@example');
    expect(new Date(expiresAt).getTime()).toBeGreaterThan(Date.now() + 3500_000);
    expect((await call('GET', '/v1/projects', token)).statusCode).toBe(200);
    for (const body of [{}, { sub: '' }, { sub: 'a b' }, { sub: 'x'.repeat(201) }]) expect((await call('POST', '/dev/identity/token', undefined, body)).statusCode).toBe(400);
  });
});
