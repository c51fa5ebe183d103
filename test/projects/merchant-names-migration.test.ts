import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isUniqueViolation } from '../../src/platform/db-errors.js';
import { runMigrations } from '../../src/platform/migrate.js';
import type { TestDatabase } from '../helpers/database.js';
import { databaseBefore } from '../helpers/migrations.js';

// Migration 0023 makes merchant names unique per project. A database that already holds duplicates must
// migrate anyway: the oldest keeps its name, later ones become "name (2)", "name (3)", ... (skipping names
// already taken), shortened to stay within 200 characters. Runs on PGlite and on PostgreSQL (DATABASE_URL).

const UNIQUE_NAMES = '0023_merchants_unique_names';
let db: TestDatabase;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ db, close } = await databaseBefore(UNIQUE_NAMES));
});
afterAll(async () => {
  await close?.();
});

it('renames existing duplicate merchant names, then enforces uniqueness per project', async () => {
  const q = (statement: ReturnType<typeof sql>) => db.database.query<Record<string, unknown>>(statement);
  const project = (id: string) => q(sql`insert into projects (id, owner_user_id, name, created_at, updated_at) values (${id}, 'owner', 'p', now(), now())`);
  const p1 = '01900000-0000-7000-8000-0000000000a1';
  const p2 = '01900000-0000-7000-8000-0000000000a2';
  await project(p1);
  await project(p2);
  const long = 'L'.repeat(200);
  const merchants: Array<[string, string, string, number]> = [
    // id suffix, project, name, created (seconds after epoch 1.7e9)
    ['01', p1, 'Shop', 1],
    ['02', p1, 'Shop', 2],
    ['03', p1, 'Shop (2)', 0], // already holds the first candidate: the second "Shop" skips to (3)
    ['04', p1, 'Shop', 3],
    ['05', p1, long, 1],
    ['06', p1, long, 2],
    ['07', p2, 'Shop', 5], // another project: untouched
    ['08', p1, 'Kiosk', 1],
  ];
  for (const [suffix, projectId, name, created] of merchants) {
    await q(sql`insert into merchants (id, project_id, name, enabled, pay_to, network, asset, created_at, updated_at)
      values (${`01900000-0000-7000-8000-0000000000${suffix}`}, ${projectId}, ${name}, true, '0x0000000000000000000000000000000000000001', 'eip155:4663',
              '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', to_timestamp(${1_700_000_000 + created}), to_timestamp(${1_700_000_000 + created}))`);
  }

  await runMigrations(db.database);

  const rows = await q(sql`select right(id::text, 2) as suffix, name from merchants order by id`);
  expect(Object.fromEntries(rows.map((row) => [row.suffix, row.name]))).toEqual({
    '01': 'Shop',
    '02': 'Shop (3)',
    '03': 'Shop (2)',
    '04': 'Shop (4)',
    '05': long,
    '06': `${'L'.repeat(196)} (2)`,
    '07': 'Shop',
    '08': 'Kiosk',
  });
  const insertDuplicate = q(sql`insert into merchants (id, project_id, name, enabled, pay_to, network, asset, created_at, updated_at)
    values ('01900000-0000-7000-8000-0000000000ff', ${p1}, 'Kiosk', true, '0x0000000000000000000000000000000000000001', 'eip155:4663', 'x', now(), now())`);
  const refused = await insertDuplicate.then(() => null, (error: unknown) => error);
  expect(isUniqueViolation(refused, 'merchants_project_name_unique')).toBe(true);
});
