// `tollgate dev fund ADDRESS AMOUNT`: in-process with no instance running (the devchain state in the
// data dir keeps the money), through the admin socket of a running instance, and refused in production.
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, dataDirs } from '../helpers/cli.js';
import { Devchain, startEphemeralDevchain } from '../../src/chain/devchain.js';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { randomAddress } from './support.js';

const dirs = dataDirs();
afterAll(dirs.removeAll);
const dataDir = () => dirs.migrated();

describe('tollgate dev fund', () => {
  it('funds with no instance running; the devchain state in the data dir keeps it', { timeout: 120_000 }, async () => {
    // API_PORT 0: no port to find taken, whatever else runs on this machine (see the CLI's wrong-instance guard).
    const env = { TOLLGATE_DATA_DIR: dataDir(), DEVCHAIN_PORT: '0', API_PORT: '0' };
    const address = randomAddress();
    const first = await cli(env, 'dev', 'fund', address, '2.5');
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ address, amount: '2.5', balance: '2.5' });
    // The CLI stopped its devchain; a new one on the same data dir still has the money.
    const chain = new Devchain({ dataDir: env.TOLLGATE_DATA_DIR, port: 0 });
    await chain.start();
    try {
      expect(await chain.balanceOf(address)).toBe(2_500_000n);
    } finally {
      await chain.stop();
    }
  });

  it('goes through the admin socket of a running instance', { timeout: 120_000 }, async () => {
    const env = { TOLLGATE_DATA_DIR: dataDir(), DEVCHAIN_PORT: '0', API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0' };
    const server = await startServer({ config: loadConfig({ ...env, LOG_LEVEL: 'silent' }), roles: ['api'], log: pino({ level: 'silent' }) });
    try {
      const address = randomAddress();
      const out = await cli(env, 'dev', 'fund', address, '1');
      expect(out.code).toBe(0);
      expect(await server.ctx.chain.devchain!.balanceOf(address)).toBe(1_000_000n);
    } finally {
      await server.stop();
    }
  });

  it('is refused when CHAIN_RPC_URL points at a real chain', { timeout: 120_000 }, async () => {
    const chain = await startEphemeralDevchain();
    try {
      const out = await cli({ TOLLGATE_DATA_DIR: dataDir(), CHAIN_RPC_URL: chain.rpcUrl, API_PORT: '0' }, 'dev', 'fund', randomAddress(), '1');
      expect(out.code).toBe(2);
      expect(out.stderr).toContain('dev fund needs the embedded devchain');
    } finally {
      await chain.stop();
    }
  });
});
