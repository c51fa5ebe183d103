import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { PGLITE_SUBDIR } from '../../src/platform/configured-database.js';
import { openDatabase, startPglite, type Database, type OpenDatabaseOptions } from '../../src/platform/db.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { adminQuery, databaseUrl } from './pg-admin.js';
import { leasePglite } from './pglite-pool.js';

export interface TestDatabase {
  database: Database;
  /** Connection URL of the fresh database on PostgreSQL; null on PGlite. */
  url: string | null;
  close(): Promise<void>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated database on the PostgreSQL server that new test databases are copied from (test/build-once.ts). */
    pgTemplate: string | null;
    /** On PGlite, a migrated embedded database that spawned instances' data dirs start from (test/build-once.ts). */
    pgliteTemplateDir: string | null;
  }
}

/**
 * A fresh, migrated database for one test: PGlite in memory by default, or a new database on the
 * PostgreSQL server named by DATABASE_URL (dropped again on close).
 *
 * Both start from an already migrated image, so the migrations that then run find nothing to do: on PostgreSQL a
 * copy of the run's template database, on PGlite an instance an earlier file emptied (test/helpers/pglite-pool.ts)
 * or else a dump of one migrated in this process, opened with the WebAssembly compiled once. A database opened with
 * `migrate: false` starts empty, as before.
 */
export async function openTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const migrate = options.migrate !== false;
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl && migrate) {
    // An emptied instance from an earlier file when there is one (test/helpers/pglite-pool.ts).
    const lease = await leasePglite(migratedPglite);
    await runMigrations(lease.database);
    return { database: lease.database, url: null, close: lease.release };
  }
  let url: string | null = null;
  let drop = async () => {};
  if (serverUrl) {
    const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
    const template = migrate ? pgTemplate() : null;
    await adminQuery(serverUrl, `create database ${name}${template ? ` template ${template}` : ''}`);
    url = databaseUrl(serverUrl, name);
    drop = () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`);
  }
  const database = await openDatabase({ url, pgliteDir: null, poolSize: 10, pglite: url ? undefined : await pgliteStart(migrate) });
  if (migrate) await runMigrations(database);
  return {
    database,
    url,
    async close() {
      await database.close();
      await drop();
    },
  };
}

/** A PGlite in memory opened from the worker's migrated dump. */
export async function migratedPglite() {
  return startPglite(null, await pgliteStart(true));
}

/** The run's template database; null outside a vitest run (bench/ opens test databases too) or before one exists. */
export function pgTemplate(): string | null {
  try {
    return inject('pgTemplate') ?? null;
  } catch {
    return null;
  }
}

/**
 * A data dir whose embedded database (PGlite) starts migrated: a copy of the run's migrated one, as a database on
 * PostgreSQL starts from a copy of the template database. An instance started on it finds no migration to run,
 * where a fresh dir costs it initdb and every migration (several CPU-seconds a start). The copy (~30 MB) does not
 * ask which database the instance will use: where it runs on PostgreSQL the copy is simply never opened. Nothing
 * outside a vitest run.
 */
export function seedDataDir(dataDir: string): void {
  let template: string | null = null;
  try {
    template = inject('pgliteTemplateDir') ?? null;
  } catch {
    return;
  }
  if (template) fs.cpSync(template, path.join(dataDir, PGLITE_SUBDIR), { recursive: true });
}

/** A new temporary data dir seeded as above: for tests about anything but a first start's migrations. */
export function migratedDataDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  seedDataDir(dir);
  return dir;
}

type PgliteStart = NonNullable<OpenDatabaseOptions['pglite']>;
let compiled: Promise<Pick<PgliteStart, 'wasmModule' | 'fsBundle'>> | null = null;
let migratedDump: Promise<Blob> | null = null;

/** PGlite's WebAssembly compiled once per worker, and (migrated) a dump of a database migrated once per worker. */
async function pgliteStart(migrated: boolean): Promise<PgliteStart> {
  compiled ??= (async () => {
    const dist = path.dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    // Node has WebAssembly; the project's TypeScript libs (no DOM) declare only its types.
    const { compile } = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<PgliteStart['wasmModule']> } }).WebAssembly;
    const wasmModule = await compile(fs.readFileSync(path.join(dist, 'pglite.wasm')));
    return { wasmModule, fsBundle: new Blob([fs.readFileSync(path.join(dist, 'pglite.data'))]) };
  })();
  const start = await compiled;
  if (!migrated) return start;
  migratedDump ??= (async () => {
    const seed = await openDatabase({ url: null, pgliteDir: null, pglite: start });
    try {
      await runMigrations(seed);
      return (await seed.snapshot!(async () => null)).tarball;
    } finally {
      await seed.close();
    }
  })();
  return { ...start, loadDataDir: await migratedDump };
}
