import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { openDatabase, type Database } from './db.js';
import { runMigrations, type MigrationReport } from './migrate.js';

// Apart from server.ts so `tollgate migrate` opens the database without loading the whole service.

/** Where the embedded database lives inside the data dir. */
export const PGLITE_SUBDIR = 'pg';
export const pgliteDir = (config: Config) => path.join(config.dataDir, PGLITE_SUBDIR);

/** Opens the database the config names (PGlite in the data dir, or PostgreSQL) and migrates it. */
export async function openConfiguredDatabase(config: Config, report?: MigrationReport): Promise<Database> {
  fs.mkdirSync(config.dataDir, { recursive: true });
  const database = await openDatabase({ url: config.databaseUrl, pgliteDir: pgliteDir(config), poolSize: config.databasePoolSize });
  await runMigrations(database, undefined, report);
  return database;
}
