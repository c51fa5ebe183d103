// Sharp edges of the operator CLI (issue 48 item 6): a credential made with a missing or wrong SECRET_PEPPER would be
// refused by the cluster, so the CLI refuses first (exit 2, as serve does); `tollgate --version` and `-h`; and
// `tollgate admin --help` lists every operator command there is.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { adminCommands } from '../../src/admin/commands.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { openTestDatabase } from '../helpers/database.js';
import { buildTestApp } from '../helpers/test-app.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

describe('the CLI refuses a pepper the deployment does not use', () => {
  it('mgmt-credential create: dev pepper beside a shared database → exit 2; wrong pepper → exit 2; the right one (or it as the previous during a rotation) → accepted', { timeout: 180_000 }, async () => {
    const database = process.env.DATABASE_URL ? await openTestDatabase() : null;
    const pepper = randomBytes(32).toString('hex');
    const base = { TOLLGATE_DATA_DIR: dirs.migrated(), API_PORT: '0', DEVCHAIN_PORT: '0', DATABASE_URL: database?.url ?? '' };
    try {
      if (database) {
        // No SECRET_PEPPER beside a shared database: refused before anything is written, naming it.
        const dev = await cli({ ...base, ALLOW_DEV_KEYS: '0' }, 'mgmt-credential', 'create', '--name', 'ops');
        expect(dev.code).toBe(2);
        expect(dev.stderr).toContain('SECRET_PEPPER: unset');
        expect(dev.stdout).not.toContain('secret:');
      }
      const first = await cli({ ...base, ALLOW_DEV_KEYS: '1', SECRET_PEPPER: pepper }, 'mgmt-credential', 'create', '--name', 'ops');
      expect(first.code, first.stderr).toBe(0);
      // Another pepper than the one the stored credentials are under: refused, naming both.
      const wrong = await cli({ ...base, ALLOW_DEV_KEYS: '1', SECRET_PEPPER: randomBytes(32).toString('hex') }, 'mgmt-credential', 'create', '--name', 'ops');
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/SECRET_PEPPER: not the pepper of this database's credentials: none of its 1 secret hashes is under this pepper/);
      expect(wrong.stdout).not.toContain('secret:');
      // During a rotation the old pepper as the previous one is the deployment's: accepted.
      const rotating = await cli({ ...base, ALLOW_DEV_KEYS: '1', SECRET_PEPPER: randomBytes(32).toString('hex'), SECRET_PEPPER_PREVIOUS: pepper }, 'keys', 'status');
      expect(rotating.code, rotating.stderr).toBe(0);
      expect(rotating.stdout).toMatch(/mgmt_credentials\.secret_hash\s+current 0 {2}previous 1/);
      // And serve refuses the wrong pepper the same way (exit 2), before it listens.
      const serve = await cli({ ...base, ALLOW_DEV_KEYS: '1', SECRET_PEPPER: randomBytes(32).toString('hex'), FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0' }, 'serve', '--roles', 'api');
      expect(serve.code).toBe(2);
      expect(serve.stderr).toContain('SECRET_PEPPER: not the pepper of this database');
    } finally {
      await database?.close();
    }
  });
});

describe('tollgate --version, -h and admin --help', () => {
  it('prints the version and the usage, and admin --help names every operator command', { timeout: 120_000 }, async () => {
    const env = { TOLLGATE_DATA_DIR: dirs.create() };
    const version = await cli(env, '--version');
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^tollgate \d+\.\d+\.\d+( \([0-9a-f]{12}\))?\n$/);
    const usage = await cli(env, '-h');
    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/^Usage: tollgate <command>/);
    for (const command of ['audit', 'keys', 'backup', 'restore']) {
      const help = await cli(env, command, '--help');
      expect(help.code, command).toBe(0);
      expect(help.stdout.startsWith(`tollgate ${command}`), command).toBe(true);
    }
    const admin = (await cli(env, 'admin', '--help')).stdout;
    const app = await buildTestApp();
    try {
      const names = Object.keys(adminCommands(app.ctx, app.modules));
      expect(names.length).toBeGreaterThan(15);
      expect(names.filter((name) => !admin.includes(name))).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
