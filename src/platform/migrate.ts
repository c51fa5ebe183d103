import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { Database } from './db.js';
import { projectPath } from './project-root.js';

export const MIGRATIONS_DIR = projectPath('migrations');

/**
 * Applies the committed forward-only migrations. The advisory lock makes nodes that start together
 * against one PostgreSQL take turns; the second finds everything applied and does nothing.
 */
export async function runMigrations(database: Database, migrationsFolder = MIGRATIONS_DIR, report?: MigrationReport): Promise<string[]> {
  return database.withAdvisoryLock('tollgate:migrations', async () => {
    const pending = await pendingMigrations(database, migrationsFolder);
    if (pending.length > 0) report?.(`migrations: applying ${pending.length}: ${pending.join(', ')}`);
    const started = Date.now();
    if (database.kind === 'pglite') {
      await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder });
    } else {
      await migratePg(database.db as unknown as NodePgDatabase, { migrationsFolder });
    }
    report?.(pending.length > 0 ? `migrations: applied ${pending.length} in ${Date.now() - started} ms` : 'migrations: the database is up to date');
    return pending;
  });
}

/** Told what the migrations do: which are applied (names), and when the database was already up to date. */
export type MigrationReport = (line: string) => void;

/**
 * The journal's migrations the database has not applied: those after the last one it recorded (drizzle's rule:
 * a migration applies when it is newer than the newest applied), all of them on a new database.
 */
async function pendingMigrations(database: Database, migrationsFolder: string): Promise<string[]> {
  const journal = JSON.parse(fs.readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as { entries: Array<{ tag: string; when: number }> };
  let last = -Infinity;
  try {
    const [row] = await database.query<{ created_at: string | number | null }>(sql`select max(created_at) as created_at from drizzle.__drizzle_migrations`);
    if (row?.created_at !== null && row?.created_at !== undefined) last = Number(row.created_at);
  } catch {
    // No migrations table yet: a new database, every migration pending.
  }
  return journal.entries.filter((entry) => entry.when > last).map((entry) => entry.tag);
}
