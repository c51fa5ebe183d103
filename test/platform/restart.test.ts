import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { callAdminSocket } from '../../src/admin/socket.js';
import { loadConfig } from '../../src/config.js';
import { ROLES } from '../../src/platform/server-settings.js';
import { startServer } from '../../src/server.js';
import { migratedDataDir } from '../helpers/database.js';

// The embedded mode as `npm start` runs it: PGlite in the data dir, admin socket, real listeners.
const dataDir = migratedDataDir('tollgate-restart-');
const config = loadConfig({ TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0', LOG_LEVEL: 'silent' });
const start = () => startServer({ config, roles: ROLES, log: pino({ level: 'silent' }) });

afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe.skipIf(Boolean(process.env.DATABASE_URL))('embedded mode across a restart', () => {
  it('keeps data, serves the CLI through a 0600 admin socket, and frees the socket on stop', async () => {
    const first = await start();
    let secret: string;
    try {
      const created = (await callAdminSocket(dataDir, 'mgmt-credential.create', { name: 'ops' })) as { secret: string };
      secret = created.secret;
      expect(secret).toMatch(/^svc_api_/);
      expect(fs.statSync(path.join(dataDir, 'admin.sock')).mode & 0o777).toBe(0o600);
      await expect(callAdminSocket(dataDir, 'mgmt-credential.create', {})).rejects.toThrow(/--name is required/);
    } finally {
      await first.stop();
    }
    expect(await callAdminSocket(dataDir, 'mgmt-credential.create', { name: 'x' })).toBeNull();

    const second = await start();
    try {
      const principal = await second.ctx.auth.authenticate(`Bearer ${secret}`, ['mgmt']);
      expect(principal.kind).toBe('mgmt');
      const health = await fetch(`${second.urls.api}/openapi.json`);
      expect(health.status).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
