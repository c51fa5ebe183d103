import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MIGRATIONS_DIR, runMigrations } from '../../src/platform/migrate.js';
import { openTestDatabase, type TestDatabase } from './database.js';

/**
 * A test database migrated up to, not including, the migration tagged `tag` (the same files, the journal cut
 * there), to seed rows as an earlier release left them; `runMigrations(db.database)` then applies the rest.
 */
export async function databaseBefore(tag: string): Promise<{ db: TestDatabase; close(): Promise<void> }> {
  const before = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-migrations-'));
  fs.cpSync(MIGRATIONS_DIR, before, { recursive: true });
  const journalPath = path.join(before, 'meta/_journal.json');
  const journal = JSON.parse(fs.readFileSync(journalPath, 'utf8')) as { entries: Array<{ tag: string }> };
  const cut = journal.entries.findIndex((entry) => entry.tag === tag);
  if (cut <= 0) throw new Error(`no migration tagged ${tag} after the first`);
  fs.writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, cut) }));
  const db = await openTestDatabase({ migrate: false });
  await runMigrations(db.database, before);
  return {
    db,
    async close() {
      await db.close();
      fs.rmSync(before, { recursive: true, force: true });
    },
  };
}
