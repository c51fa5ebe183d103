import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isCheckViolation } from '../../src/platform/db-errors.js';
import { runMigrations } from '../../src/platform/migrate.js';
import type { TestDatabase } from '../helpers/database.js';
import { databaseBefore } from '../helpers/migrations.js';

// Migration 0043 has the database keep events' rule "finished_at is set exactly while an event is terminal" (a
// queue's delete relies on it). A database holding rows that broke the rule must migrate anyway: a terminal event
// without finished_at gets its updated_at, an open one with finished_at loses it. Runs on PGlite and PostgreSQL.

const CHECKED = '0043_events_without_queue_fk';
let db: TestDatabase;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ db, close } = await databaseBefore(CHECKED));
});
afterAll(async () => {
  await close?.();
});

it('mends events that broke the finished_at rule, then enforces it', async () => {
  const q = <T>(statement: ReturnType<typeof sql>) => db.database.query<T>(statement);
  const queue = '01900000-0000-7000-8000-0000000000b1';
  await q(sql`insert into event_queues (id, project_id, name, default_lease_seconds, max_attempts, created_at, updated_at)
              values (${queue}, 'p', 'q', 30, 3, now(), now())`);
  const rows: Array<[string, string, string | null]> = [
    ['01', 'acked', null], // terminal, no finished_at: gets its updated_at
    ['02', 'available', '2026-01-01T00:00:00Z'], // open, with finished_at: loses it
    ['03', 'dead', '2026-01-02T00:00:00Z'], // kept as it was
    ['04', 'leased', null],
  ];
  for (const [suffix, status, finished] of rows) {
    await q(sql`insert into events (id, project_id, queue_id, payload, status, attempts, max_attempts, available_at, created_at, updated_at, finished_at)
      values (${`01900000-0000-7000-8000-0000000000${suffix}`}, 'p', ${queue}, '{}'::jsonb, ${status}, 1, 3, now(),
              '2026-01-03T00:00:00Z', '2026-01-03T00:00:00Z', ${finished}::timestamptz)`);
  }

  await runMigrations(db.database);

  const after = await q<{ id: string; finished: string | null }>(
    sql`select right(id::text, 2) as id, to_char(finished_at at time zone 'UTC', 'YYYY-MM-DD') as finished from events order by id`,
  );
  expect(after).toEqual([
    { id: '01', finished: '2026-01-03' },
    { id: '02', finished: null },
    { id: '03', finished: '2026-01-02' },
    { id: '04', finished: null },
  ]);
  const refused = await q(sql`update events set finished_at = null where status = 'dead'`).then(() => null, (error: unknown) => error);
  expect(isCheckViolation(refused, 'events_finished_when_terminal'), String(refused)).toBe(true);
});
