// Migrations say what they apply (issue 48 item 6): `tollgate migrate` names each migration it applies and says when
// there was nothing to do; `serve` logs the same lines.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS_DIR } from '../../src/platform/migrate.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { openTestDatabase } from '../helpers/database.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

describe('tollgate migrate', () => {
  it('names every migration it applies, then says the database is up to date', { timeout: 120_000 }, async () => {
    const tags = (JSON.parse(fs.readFileSync(path.join(MIGRATIONS_DIR, 'meta/_journal.json'), 'utf8')) as { entries: Array<{ tag: string }> }).entries.map((e) => e.tag);
    // On PostgreSQL a new, empty database of its own; else PGlite in a new data dir.
    const database = process.env.DATABASE_URL ? await openTestDatabase({ migrate: false }) : null;
    const env = { TOLLGATE_DATA_DIR: dirs.create(), DATABASE_URL: database?.url ?? '', ALLOW_DEV_KEYS: '1' };
    const first = await cli(env, 'migrate');
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain(`migrations: applying ${tags.length}: ${tags.join(', ')}`);
    expect(first.stdout).toMatch(new RegExp(`^migrations: applied ${tags.length} in \\d+ ms$`, 'm'));
    const again = await cli(env, 'migrate');
    expect(again.stdout.trim()).toBe('migrations: the database is up to date');
    await database?.close();
  });

  it('migrates with a pool of one connection (DATABASE_POOL_SIZE=1): the lock holds no connection of the pool', { timeout: 120_000 }, async () => {
    const database = process.env.DATABASE_URL ? await openTestDatabase({ migrate: false }) : null;
    const env = { TOLLGATE_DATA_DIR: dirs.create(), DATABASE_URL: database?.url ?? '', ALLOW_DEV_KEYS: '1', DATABASE_POOL_SIZE: '1' };
    const first = await cli(env, 'migrate'); // cli() gives up after 60 s: a wait for the pool's only connection fails here
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^migrations: applied \d+ in \d+ ms$/m);
    await database?.close();
  });
});
