// `npx tollgate audit` (issue 48, must show): an operator switch and a credential revoke, made through the CLI
// and through the API, appear with their request ids; --target, --since and --json; and the same trail with no
// instance running (the CLI opens the data dir itself).
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { openTestDatabase } from '../helpers/database.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);

describe('tollgate audit', () => {
  it('shows an operator switch and a credential revoke with their request ids, running and stopped', { timeout: 240_000 }, async () => {
    const dataDir = dirs.migrated();
    // On PostgreSQL (DATABASE_URL set) the instance and the CLI share a fresh database; else PGlite in the data dir.
    const database = process.env.DATABASE_URL ? await openTestDatabase() : null;
    const env = { TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', DATABASE_URL: database?.url ?? '' };
    const server = await startServer({ config: loadConfig({ ...env, LOG_LEVEL: 'silent' }), roles: ['api'], log: pino({ level: 'silent' }) });
    try {
      const api = server.urls.api;
      const owner = await server.ctx.devIdentity!.sign('audit-owner');
      const post = async (url: string, body: unknown, requestId: string, method = 'POST') => {
        const response = await fetch(`${api}${url}`, { method, headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json', 'x-request-id': requestId }, body: body === null ? undefined : JSON.stringify(body) });
        return (await response.json()) as { data: { id: string; project: { id: string }; apiKey: { id: string } } };
      };
      const { project, apiKey } = (await post('/v1/projects', { name: 'audited' }, 'api-project')).data;
      const merchant = (await post(`/v1/projects/${project.id}/merchants`, { name: 'store', payTo: '0x1111111111111111111111111111111111111111' }, 'api-merchant')).data;

      // The operator switch, through the CLI (admin socket) under a request id of the operator's choosing.
      const disabled = await cli({ ...env, TOLLGATE_REQUEST_ID: 'ops-disable-1' }, 'admin', 'merchant.disable', '--id', merchant.id);
      expect(disabled.code, disabled.stderr).toBe(0);
      // A credential revoke through the API, and one through the CLI.
      await fetch(`${api}/v1/projects/${project.id}/api-keys/${apiKey.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner}`, 'x-request-id': 'api-revoke-2' } });
      const mgmt = await cli(env, 'mgmt-credential', 'create', '--name', 'ops');
      const mgmtId = /\(([0-9a-f-]{36})\)/.exec(mgmt.stdout)![1]!;
      expect((await cli({ ...env, TOLLGATE_REQUEST_ID: 'ops-revoke-3' }, 'mgmt-credential', 'revoke', '--id', mgmtId)).code).toBe(0);

      const text = await cli(env, 'audit');
      expect(text.code, text.stderr).toBe(0);
      const lines = text.stdout.trim().split('\n');
      const lineOf = (requestId: string) => lines.find((line) => line.includes(`request ${requestId}`));
      expect(lineOf('ops-disable-1')).toMatch(new RegExp(`^\\S+Z  operator:\\S+@\\S+  merchant\\.disable  ${merchant.id}  ok  request ops-disable-1  project ${project.id}$`));
      expect(lineOf('api-revoke-2')).toMatch(new RegExp(`identity:audit-owner  project-key\\.revoke  ${apiKey.id}  ok 200  request api-revoke-2  project ${project.id}$`));
      expect(lineOf('ops-revoke-3')).toMatch(new RegExp(`operator:\\S+  mgmt-credential\\.revoke  ${mgmtId}  ok  request ops-revoke-3`));
      // Oldest first.
      expect(lines.findIndex((l) => l.includes('api-project'))).toBeLessThan(lines.findIndex((l) => l.includes('ops-revoke-3')));
      expect(text.stdout).not.toMatch(/svc_api_/);

      const json = await cli(env, 'audit', '--target', merchant.id, '--json', '--since', '1h');
      const entries = json.stdout.trim().split('\n').map((line) => JSON.parse(line));
      expect(entries.map((e) => e.action)).toEqual(['merchant.create', 'merchant.disable']);
      expect(entries[1]).toMatchObject({ actor: { kind: 'operator' }, target: merchant.id, requestId: 'ops-disable-1', via: 'cli', outcome: 'ok', projectId: project.id });
      expect((await cli(env, 'audit', '--since', '2999-01-01T00:00:00Z')).stdout).toBe('');
      expect((await cli(env, 'audit', '--since', 'yesterday')).code).toBe(2);
    } finally {
      await server.stop();
    }
    // No instance: the CLI opens the data dir (or the database) itself and reads the same trail.
    const offline = await cli(env, 'audit', '--json');
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.stdout).toContain('"requestId":"ops-disable-1"');
    expect(offline.stdout).toContain('"requestId":"api-revoke-2"');
    await database?.close();
  });
});
