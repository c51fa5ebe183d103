// The operator CLI cannot mislead: --help on every command, `status` of the running instance, and a
// refusal (naming the data dir it used and how to point it elsewhere) when it would act on a data
// dir that no running instance uses while another instance holds the api port.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../wallets/helpers.js';
import { cli, dataDirs } from '../helpers/cli.js';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);
const dataDir = () => dirs.create();

describe('tollgate CLI', () => {
  it('answers --help for every command without touching any data dir', { timeout: 120_000 }, async () => {
    const env = { TOLLGATE_DATA_DIR: path.join(dataDir(), 'never-created') };
    for (const [args, first] of [
      [['serve', '--help'], 'tollgate serve'],
      [['status', '--help'], 'tollgate status'],
      [['migrate', '-h'], 'tollgate migrate'],
      [['mgmt-credential', 'create', '--help'], 'tollgate mgmt-credential create'],
      [['dev', 'token', '--help'], 'tollgate dev token'],
      [['admin', '--help'], 'tollgate admin'],
      [['credits', 'grant', '--help'], 'tollgate credits grant'],
    ] as const) {
      const out = await cli(env, ...args);
      expect(out.code, args.join(' ')).toBe(0);
      expect(out.stdout.startsWith(first), args.join(' ')).toBe(true);
    }
    expect((await cli(env, 'nope', '--help')).code).toBe(2);
    expect(fs.existsSync(env.TOLLGATE_DATA_DIR)).toBe(false);
  });

  it('serve refuses dev keys beside a shared database or a real chain (exit 2 naming each), unless ALLOW_DEV_KEYS=1', async () => {
    const env = { TOLLGATE_DATA_DIR: path.join(dataDir(), 'never-created'), ALLOW_DEV_KEYS: '0', CHAIN_RPC_URL: 'http://127.0.0.1:1' };
    const out = await cli(env, 'serve');
    expect(out.code).toBe(2);
    for (const name of ['SECRET_PEPPER', 'IDENTITY_JWKS_URL', 'WALLET_MASTER_KEY', 'ATTESTATION_PRIVATE_KEY']) expect(out.stderr).toContain(`${name}: unset`);
    expect(out.stderr).toContain('ALLOW_DEV_KEYS=1');
    expect(fs.existsSync(env.TOLLGATE_DATA_DIR)).toBe(false);
  });

  it('status prints the running instance\'s origins and loops; refuses other data dirs; says so with no instance', { timeout: 180_000 }, async () => {
    const running = dirs.migrated();
    const apiPort = await freePort();
    const ports = { API_PORT: String(apiPort), FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' };
    const server = await startServer({ config: loadConfig({ TOLLGATE_DATA_DIR: running, ...ports, LOG_LEVEL: 'silent' }), roles: ['api', 'worker'], log: pino({ level: 'silent' }) });
    try {
      const status = await cli({ TOLLGATE_DATA_DIR: running, ...ports }, 'status');
      expect(status.code).toBe(0);
      expect(status.stdout).toContain(`data dir     ${running}`);
      expect(status.stdout).toContain(`api          ${server.urls.api}`);
      expect(status.stdout).toMatch(/loop events\.sweeper: last run [0-9T:.-]+Z, lag \d+ ms, 0 failures in a row/);

      // Another data dir while this instance holds API_PORT: refused, nothing written there.
      const other = path.join(dataDir(), 'second-shell');
      const refused = await cli({ TOLLGATE_DATA_DIR: other, ...ports }, 'mgmt-credential', 'create', '--name', 'ops');
      expect(refused.code).toBe(3);
      expect(refused.stderr).toContain(`data dir ${other}`);
      expect(refused.stderr).toContain(`127.0.0.1:${apiPort} (API_PORT) is in use`);
      expect(refused.stderr).toContain('TOLLGATE_DATA_DIR=/path/to/its/data npx tollgate mgmt-credential create --name ops');
      expect(refused.stdout).not.toContain('secret');
      expect(fs.existsSync(other)).toBe(false);
    } finally {
      await server.stop();
    }
    const none = await cli({ TOLLGATE_DATA_DIR: running, ...ports }, 'status');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`no instance answers on ${path.join(running, 'admin.sock')}`);
  });
});
