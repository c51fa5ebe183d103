import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { expect } from 'vitest';
import { createEventsServices, type EventsServices } from '../../src/modules/events/services.js';
import { ManualClock } from '../../src/platform/clock.js';
import { SecretHasher } from '../../src/platform/secrets.js';
import { openTestDatabase, type TestDatabase } from '../helpers/database.js';
import type { TestApp } from '../helpers/test-app.js';

export interface EventsHarness extends EventsServices {
  clock: ManualClock;
  testDatabase: TestDatabase;
  close(): Promise<void>;
}

/** The Events services over a fresh database and a hand-moved clock, without HTTP or loops. */
export async function openEventsHarness(start = '2026-03-05T00:00:00Z'): Promise<EventsHarness> {
  const testDatabase = await openTestDatabase();
  const clock = new ManualClock(start);
  const services = createEventsServices({
    database: testDatabase.database,
    clock,
    hasher: new SecretHasher(randomBytes(32).toString('hex')),
    log: pino({ level: 'silent' }),
  });
  return {
    ...services,
    clock,
    testDatabase,
    async close() {
      services.waiters.close();
      services.notifier.close();
      await testDatabase.close();
    },
  };
}

/** A new project (owned by `sub`) through the projects API; returns its API key secret. */
export async function createProjectKey(app: TestApp, sub: string): Promise<string> {
  const token = await app.identityToken(sub);
  const response = await app.origins.api!.inject({
    method: 'POST',
    url: '/v1/projects',
    headers: { authorization: `Bearer ${token}` },
    payload: { name: `project of ${sub}` },
  });
  expect(response.statusCode).toBe(201);
  const secret = response.json().data.apiKey.secret as string;
  expect(secret.startsWith('svc_api_')).toBe(true);
  return secret;
}
