import { sql } from 'drizzle-orm';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/platform/db.js';
import { MIGRATIONS_DIR, runMigrations } from '../../src/platform/migrate.js';
import { openTestDatabase } from '../helpers/database.js';

const journalEntries = () =>
  (JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length;

describe('migrations', () => {
  it('apply once when two nodes start at the same time, and again is a no-op', async () => {
    const fresh = await openTestDatabase({ migrate: false });
    // A second node: its own connection pool to the same database (PGlite: the same process).
    const second = fresh.url ? await openDatabase({ url: fresh.url, pgliteDir: null }) : fresh.database;
    try {
      await Promise.all([runMigrations(fresh.database), runMigrations(second)]);
      const count = async () =>
        (await fresh.database.query<{ n: number }>(sql`select count(*)::int as n from drizzle.__drizzle_migrations`))[0].n;
      expect(await count()).toBe(journalEntries());
      await runMigrations(second);
      expect(await count()).toBe(journalEntries());
      const tables = await fresh.database.query<{ name: string }>(
        sql`select table_name as name from information_schema.tables where table_schema = 'public'`,
      );
      expect(tables.map((t) => t.name)).toEqual(expect.arrayContaining(['mgmt_credentials', 'projects']));
    } finally {
      if (second !== fresh.database) await second.close();
      await fresh.close();
    }
  });
});
