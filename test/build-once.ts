// Before any worker starts: build what spawned processes run, and migrate the template test databases copy.
// Tests that run the real CLI or server spawn bin/tollgate.js, which rebuilds dist/ when src/ changed;
// building once here keeps that out of every spawned child's timing.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { PGLITE_SUBDIR } from '../src/platform/configured-database.js';
import { openDatabase } from '../src/platform/db.js';
import { runMigrations } from '../src/platform/migrate.js';
import { adminQuery, databaseUrl } from './helpers/pg-admin.js';

export default async function buildOnce(project: TestProject): Promise<() => Promise<void>> {
  execFileSync(process.execPath, ['bin/build.js'], { stdio: 'inherit' });
  const serverUrl = process.env.DATABASE_URL;
  // Both passes: the PostgreSQL pass spawns embedded instances too (the CLI tests, `DATABASE_URL=''` by design).
  const [pglite, postgres] = await Promise.all([migratedPgliteDir(), serverUrl ? migratedTemplate(serverUrl) : null]);
  project.provide('pgliteTemplateDir', pglite.dir);
  project.provide('pgTemplate', postgres?.name ?? null);
  return async () => {
    await pglite.remove();
    await postgres?.drop();
  };
}

/**
 * A spawned instance's embedded data dir starts from a copy of this one (seedDataDir): a fresh PGlite pays initdb
 * and every migration, several CPU-seconds per start, before the instance serves.
 */
async function migratedPgliteDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-template-'));
  const database = await openDatabase({ url: null, pgliteDir: path.join(dataDir, PGLITE_SUBDIR) });
  try {
    await runMigrations(database);
  } finally {
    await database.close();
  }
  return { dir: path.join(dataDir, PGLITE_SUBDIR), remove: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
}

/** On PostgreSQL every test database is a copy of this one (CREATE DATABASE … TEMPLATE): migrated once per run. */
async function migratedTemplate(serverUrl: string): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `tollgate_template_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `create database ${name}`);
  const database = await openDatabase({ url: databaseUrl(serverUrl, name), pgliteDir: null });
  try {
    await runMigrations(database);
  } finally {
    await database.close();
  }
  return { name, drop: () => adminQuery(serverUrl, `drop database if exists ${name} with (force)`) };
}
