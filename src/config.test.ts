import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tollgate.js');

describe('config', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.ports).toEqual({ api: 8402, facilitator: 8403, relay: 8404, assets: 8405, devchain: 8545 });
    expect(config.databaseUrl).toBeNull();
    expect(config.dataDir).toBe(path.resolve('./.data'));
    expect(config.payAndCall.maxBodyBytes).toBe(1024 * 1024);
  });

  it('treats an empty variable as unset', () => {
    expect(loadConfig({ API_PORT: '' }).ports.api).toBe(8402);
  });

  it('names every bad variable and why', () => {
    try {
      loadConfig({ API_PORT: 'eighty', DATABASE_URL: 'mysql://x', SECRET_PEPPER: 'short', LOG_LEVEL: 'loud' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      for (const name of ['API_PORT', 'DATABASE_URL', 'SECRET_PEPPER', 'LOG_LEVEL']) expect(problems).toContain(name);
    }
  });

  it('makes the CLI exit 2 with one message naming each bad variable', () => {
    const result = spawnSync(process.execPath, [bin, 'serve'], {
      env: { ...process.env, API_PORT: '99999', FACILITATOR_URL: 'not a url', DATABASE_URL: '' },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain('API_PORT');
    expect(result.stderr).toContain('FACILITATOR_URL');
  }, 120_000);
});
