import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/platform/db.js';
import { runMigrations } from '../../src/platform/migrate.js';

export interface TestDatabase {
  database: Database;
  /** Connection URL of the fresh database on PostgreSQL; null on PGlite. */
  url: string | null;
  close(): Promise<void>;
}

/**
 * A fresh, migrated database for one test: PGlite in memory by default, or a new database on the
 * PostgreSQL server named by DATABASE_URL (dropped again on close).
 */
export async function openTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  let url: string | null = null;
  let drop = async () => {};
  if (serverUrl) {
    const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
    await adminQuery(serverUrl, `create database ${name}`);
    const parsed = new URL(serverUrl);
    parsed.pathname = `/${name}`;
    url = parsed.toString();
    drop = () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`);
  }
  const database = await openDatabase({ url, pgliteDir: null, poolSize: 10 });
  if (options.migrate !== false) await runMigrations(database);
  return {
    database,
    url,
    async close() {
      await database.close();
      await drop();
    },
  };
}

async function adminQuery(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
