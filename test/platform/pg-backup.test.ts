// Backups on PostgreSQL (issue 48 item 3): docs/operations.md says to use pg_dump while the service serves and
// pg_restore into a new, empty database. Its commands, run as written against a database the service wrote, give
// a database the service starts on with every project, key, wallet and credential usable, and the audit trail
// restored with its append-only triggers.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { openTestDatabase } from '../helpers/database.js';
import { repositoryRoot } from '../helpers/readme.js';

const run = promisify(execFile);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-pg-backup-'));
const restoredName = `tollgate_restored_${process.pid}_${Date.now()}`;
afterAll(async () => {
  fs.rmSync(work, { recursive: true, force: true });
  if (process.env.DATABASE_URL) await run('dropdb', ['--if-exists', '--force', `--maintenance-db=${process.env.DATABASE_URL}`, restoredName]);
});

/** The server's URL naming another database. */
const databaseUrl = (serverUrl: string, name: string) => Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();

/** The sh block of docs/operations.md's "PostgreSQL (`DATABASE_URL`)" backup section. */
function documentedCommands(): string {
  const docs = fs.readFileSync(path.join(repositoryRoot, 'docs/operations.md'), 'utf8');
  const section = docs.slice(docs.indexOf('**PostgreSQL (`DATABASE_URL`).**'));
  return /```sh\n([\s\S]*?)```/.exec(section)![1]!;
}

async function call(base: string, method: string, route: string, secret: string, body?: unknown) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, 'x-request-id': `pg-backup-${method}-${route}`.replace(/[^\w.:-]/g, '_').slice(0, 128), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe.runIf(Boolean(process.env.DATABASE_URL))('PostgreSQL backup and restore as documented', () => {
  it('pg_dump of a serving instance, pg_restore into a new database: the service starts on it with everything usable', { timeout: 240_000 }, async () => {
    const commands = documentedCommands();
    expect(commands).toMatch(/^pg_dump --format=custom --file=.+ "\$DATABASE_URL"$/m);
    expect(commands).toMatch(/createdb tollgate_restored && pg_restore --no-owner --dbname=\S+ \S+$/m);

    const source = await openTestDatabase();
    const env = { TOLLGATE_DATA_DIR: path.join(work, 'data'), API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'silent' };
    const serve = (url: string) => startServer({ config: loadConfig({ ...env, DATABASE_URL: url }), roles: ['api'], log: pino({ level: 'silent' }) });
    const dump = path.join(work, 'tollgate.dump');
    let server = await serve(source.url!);
    let made: { owner: string; projectId: string; apiKey: string; mgmt: string; walletId: string; walletSecret: string };
    try {
      const api = server.urls.api!;
      const owner = await server.ctx.devIdentity!.sign('pg-backup-owner');
      const project = (await call(api, 'POST', '/v1/projects', owner, { name: 'dumped' })).body.data;
      const mgmt = await server.ctx.mgmtCredentials.create('pg-backup');
      const wallet = await call(api, 'POST', '/v1/wallets', mgmt.secret, { externalId: 'pg-backup', name: 'w' });
      expect(wallet.status).toBe(201);
      made = { owner, projectId: project.project.id, apiKey: project.apiKey.secret, mgmt: mgmt.secret, walletId: wallet.body.data.wallet.id, walletSecret: wallet.body.data.credential.secret };
      // While it serves (the docs' "a consistent snapshot while it serves"): the documented pg_dump line.
      await run('pg_dump', ['--format=custom', `--file=${dump}`, source.url!]);
    } finally {
      await server.stop();
    }
    await source.close(); // the source database is gone: the dump alone must carry everything

    // The documented restore: a new, empty database, pg_restore --no-owner into it.
    await run('createdb', [`--maintenance-db=${process.env.DATABASE_URL}`, restoredName]);
    const restoredUrl = databaseUrl(process.env.DATABASE_URL!, restoredName);
    await run('pg_restore', ['--no-owner', `--dbname=${restoredUrl}`, dump]);

    server = await serve(restoredUrl);
    try {
      const api = server.urls.api!;
      expect((await call(api, 'GET', '/v1/projects', made.owner)).body.data.map((p: { id: string }) => p.id)).toContain(made.projectId);
      expect((await call(api, 'GET', '/v1/event-queues', made.apiKey)).status).toBe(200);
      const wallets = await call(api, 'GET', '/v1/wallets', made.mgmt);
      expect(wallets.body.data.map((w: { id: string }) => w.id)).toContain(made.walletId);
      expect((await call(api, 'GET', '/v1/wallets/me', made.walletSecret)).body.data.id).toBe(made.walletId);
      // A wrong secret is still refused: the restored hashes are checked, not skipped.
      expect((await call(api, 'GET', '/v1/wallets', `${made.mgmt}x`)).status).toBe(401);

      const trail = await server.ctx.audit.list({ limit: 100 });
      expect(trail.map((row) => row.action)).toEqual(expect.arrayContaining(['project.create', 'wallet.create']));
      expect(trail.find((row) => row.action === 'project.create')).toMatchObject({ requestId: 'pg-backup-POST-_v1_projects', target: made.projectId });
      const refused = (await server.ctx.database.query(sql`delete from audit_log`).catch((e: unknown) => e)) as Error & { cause?: Error };
      expect(refused.cause?.message ?? refused.message).toMatch(/audit_log is append-only: DELETE refused/);
    } finally {
      await server.stop();
    }
  });
});
