import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { ConfigError } from './platform/settings.js';

const bin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/tollgate.js');

describe('config', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config.devKeyProblems).toEqual([]);
    expect(config.ports).toEqual({ api: 8402, facilitator: 8403, relay: 8404, assets: 8405, devchain: 8545, worker: 8406 });
    expect(config.databaseUrl).toBeNull();
    expect(config.dataDir).toBe(path.resolve('./.data'));
    expect(config.payAndCall.maxBodyBytes).toBe(1024 * 1024);
  });

  it("reads the paper venue's fees and per-symbol rules, and names a malformed rule", () => {
    expect(loadConfig({}).trading.paper).toEqual({ makerFeeBps: 2, takerFeeBps: 10, slippageBps: 5, markets: {} });
    const paper = loadConfig({ TRADING_PAPER_TAKER_FEE_BPS: '7.5', TRADING_PAPER_MARKETS: 'BTC-USD=0.00001/0.01/5,ETH-USD=0.0001/0.1/10' }).trading.paper;
    expect(paper).toMatchObject({ takerFeeBps: 7.5, markets: { 'BTC-USD': { lotSize: '0.00001', tickSize: '0.01', minNotionalUsd: '5' }, 'ETH-USD': { lotSize: '0.0001', tickSize: '0.1', minNotionalUsd: '10' } } });
    for (const bad of ['BTC-USD=0.00001/0.01', 'BTC-USD=0/0.01/5', 'BTC-USD=1e-5/0.01/5']) expect(() => loadConfig({ TRADING_PAPER_MARKETS: bad }), bad).toThrow(/TRADING_PAPER_MARKETS/);
    expect(() => loadConfig({ TRADING_PAPER_MAKER_FEE_BPS: '-1' })).toThrow(/TRADING_PAPER_MAKER_FEE_BPS/);
  });

  it("reads the agent-wallet withdrawals' minimum and hourly rate, and names a bad one", () => {
    expect(loadConfig({}).agentWithdrawals).toEqual({ minAmount: 10_000n, perHour: 10 });
    expect(loadConfig({ AGENT_WITHDRAW_MIN_AMOUNT: '0', AGENT_WITHDRAW_LIMIT_PER_HOUR: '2' }).agentWithdrawals).toEqual({ minAmount: 0n, perHour: 2 });
    for (const bad of ['0.01', '-1', '1e4']) expect(() => loadConfig({ AGENT_WITHDRAW_MIN_AMOUNT: bad }), bad).toThrow(/AGENT_WITHDRAW_MIN_AMOUNT/);
    for (const bad of ['0', '1.5']) expect(() => loadConfig({ AGENT_WITHDRAW_LIMIT_PER_HOUR: bad }), bad).toThrow(/AGENT_WITHDRAW_LIMIT_PER_HOUR/);
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

  describe('the dashboard\'s OpenID sign-in', () => {
    const provider = {
      IDENTITY_JWKS_URL: 'https://id.example.com/jwks',
      IDENTITY_ISSUER: 'https://id.example.com/',
      IDENTITY_AUDIENCE: 'tollgate-dashboard',
      IDENTITY_OIDC_ISSUER: 'https://id.example.com/',
      IDENTITY_OIDC_CLIENT_ID: 'tollgate-dashboard',
    };
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        return error.problems;
      }
    };

    it('is off by default, and takes the id_token with the openid scope when set', () => {
      expect(loadConfig({}).identity.oidc).toBeNull();
      expect(loadConfig(provider).identity.oidc).toEqual({ issuer: 'https://id.example.com/', clientId: 'tollgate-dashboard', scope: 'openid', token: 'id_token' });
      const access = loadConfig({ ...provider, IDENTITY_AUDIENCE: 'https://api.example.com', IDENTITY_OIDC_TOKEN: 'access_token', IDENTITY_OIDC_SCOPE: 'openid profile' });
      expect(access.identity.oidc).toMatchObject({ scope: 'openid profile', token: 'access_token' });
    });

    it('is all or nothing', () => {
      const { IDENTITY_OIDC_CLIENT_ID: _client, ...withoutClient } = provider;
      expect(problemsOf(withoutClient)).toEqual([expect.stringMatching(/^IDENTITY_OIDC_CLIENT_ID: required with IDENTITY_OIDC_ISSUER/)]);
      const { IDENTITY_OIDC_ISSUER: _issuer, ...withoutIssuer } = provider;
      expect(problemsOf({ ...withoutIssuer, IDENTITY_OIDC_SCOPE: 'openid' })).toEqual([expect.stringMatching(/^IDENTITY_OIDC_ISSUER: required with IDENTITY_OIDC_CLIENT_ID, IDENTITY_OIDC_SCOPE/)]);
      expect(problemsOf({ IDENTITY_OIDC_TOKEN: 'id_token' }).join('\n')).toMatch(/IDENTITY_OIDC_ISSUER: required[\s\S]*IDENTITY_OIDC_CLIENT_ID: required[\s\S]*IDENTITY_JWKS_URL: required/);
    });

    it('needs IDENTITY_JWKS_URL, the only way the API verifies the provider\'s tokens', () => {
      const { IDENTITY_JWKS_URL: _jwks, ...withoutJwks } = provider;
      expect(problemsOf(withoutJwks)).toEqual([expect.stringMatching(/^IDENTITY_JWKS_URL: required with IDENTITY_OIDC_ISSUER, IDENTITY_OIDC_CLIENT_ID/)]);
    });

    it('takes an https issuer, or http on a loopback host only', () => {
      for (const issuer of ['http://127.0.0.1:9000', 'http://localhost:9000/realm', 'http://[::1]:9000']) {
        expect(problemsOf({ ...provider, IDENTITY_ISSUER: issuer, IDENTITY_OIDC_ISSUER: issuer })).toEqual([]);
      }
      for (const issuer of ['http://id.example.com', 'http://10.0.0.5', 'ftp://id.example.com', 'https://id.example.com/?tenant=1']) {
        expect(problemsOf({ ...provider, IDENTITY_ISSUER: issuer, IDENTITY_OIDC_ISSUER: issuer })).toEqual([expect.stringMatching(/^IDENTITY_OIDC_ISSUER: must/)]);
      }
      expect(problemsOf({ ...provider, IDENTITY_OIDC_ISSUER: 'not a url' })[0]).toMatch(/^IDENTITY_OIDC_ISSUER/);
    });

    it('with the id_token, expects its iss and aud in IDENTITY_ISSUER and IDENTITY_AUDIENCE, and the openid scope', () => {
      expect(problemsOf({ ...provider, IDENTITY_ISSUER: 'https://id.example.com' })).toEqual([expect.stringMatching(/^IDENTITY_ISSUER: must be IDENTITY_OIDC_ISSUER \(https:\/\/id\.example\.com\/\)/)]);
      expect(problemsOf({ ...provider, IDENTITY_AUDIENCE: 'tollgate' })).toEqual([expect.stringMatching(/^IDENTITY_AUDIENCE: must be IDENTITY_OIDC_CLIENT_ID/)]);
      expect(problemsOf({ ...provider, IDENTITY_OIDC_SCOPE: 'profile email' })).toEqual([expect.stringMatching(/^IDENTITY_OIDC_SCOPE: must include openid/)]);
      expect(problemsOf({ ...provider, IDENTITY_OIDC_TOKEN: 'refresh_token' })[0]).toMatch(/^IDENTITY_OIDC_TOKEN/);
    });
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

  it('makes the CLI exit 2 naming IDENTITY_JWKS_URL when the OpenID sign-in is set without it', () => {
    const result = spawnSync(process.execPath, [bin, 'serve'], {
      env: { ...process.env, IDENTITY_JWKS_URL: '', IDENTITY_OIDC_ISSUER: 'https://id.example.com', IDENTITY_OIDC_CLIENT_ID: 'tollgate-dashboard', IDENTITY_ISSUER: 'https://id.example.com', IDENTITY_AUDIENCE: 'tollgate-dashboard' },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain('IDENTITY_JWKS_URL: required with IDENTITY_OIDC_ISSUER');
  }, 120_000);

  describe('the dev identity issuer on a listen address other machines reach', () => {
    const named = (env: Record<string, string>) => loadConfig(env).devIdentityProblems.map((p) => p.split(':')[0]);

    it('is refused on every non-loopback HOST while IDENTITY_JWKS_URL is unset', () => {
      for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.20', '203.0.113.7', '2001:db8::1', 'tollgate.example.com', 'localhost.example.com']) {
        expect(named({ HOST: host }), host).toEqual(['HOST']);
      }
      const [problem] = loadConfig({ HOST: '0.0.0.0' }).devIdentityProblems;
      expect(problem).toContain('HOST: 0.0.0.0 is not a loopback address');
      expect(problem).toContain('ALLOW_DEV_IDENTITY=1');
    });

    it('is allowed on loopback: 127.0.0.0/8, ::1 and localhost', () => {
      expect(loadConfig({}).devIdentityProblems).toEqual([]); // HOST defaults to 127.0.0.1
      for (const host of ['127.0.0.1', '127.4.5.6', '::1', '[::1]', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) {
        expect(named({ HOST: host }), host).toEqual([]);
      }
    });

    it('is allowed with ALLOW_DEV_IDENTITY=1, and moot with IDENTITY_JWKS_URL (no dev issuer runs)', () => {
      expect(named({ HOST: '0.0.0.0', ALLOW_DEV_IDENTITY: '1' })).toEqual([]);
      expect(named({ HOST: '0.0.0.0', IDENTITY_JWKS_URL: 'https://id.example.com/jwks' })).toEqual([]);
      // ALLOW_DEV_KEYS speaks for the keys beside a shared database, not for who may reach the token route.
      expect(named({ HOST: '0.0.0.0', ALLOW_DEV_KEYS: '1', DATABASE_URL: 'postgres://db/tollgate' })).toEqual(['HOST']);
      expect(() => loadConfig({ ALLOW_DEV_IDENTITY: 'yes' })).toThrow(/ALLOW_DEV_IDENTITY/);
    });
  });

  it('makes `serve` exit 2 before listening when the dev identity issuer would listen on 0.0.0.0', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tollgate-dev-identity-'));
    const result = spawnSync(process.execPath, [bin, 'serve'], {
      env: { ...process.env, HOST: '0.0.0.0', IDENTITY_JWKS_URL: '', ALLOW_DEV_IDENTITY: '', DATABASE_URL: '', TOLLGATE_DATA_DIR: dataDir, API_PORT: '0', FACILITATOR_PORT: '0', RELAY_PORT: '0', ASSETS_PORT: '0', DEVCHAIN_PORT: '0' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('Invalid configuration');
    expect(result.stderr).toContain('HOST: 0.0.0.0 is not a loopback address and IDENTITY_JWKS_URL is unset');
    expect(result.stdout).not.toMatch(/^api\s/m);
  }, 120_000);

  it('names every dev key a node beside a shared database would use, and none with ALLOW_DEV_KEYS=1 or every key set', () => {
    const shared = { DATABASE_URL: 'postgres://db/tollgate' };
    expect(loadConfig(shared).devKeyProblems.map((p) => p.split(':')[0])).toEqual([
      'SECRET_PEPPER',
      'IDENTITY_JWKS_URL',
      'WALLET_MASTER_KEY',
      'ATTESTATION_PRIVATE_KEY',
      'FACILITATOR_PRIVATE_KEYS',
    ]);
    expect(loadConfig({ ...shared, ALLOW_DEV_KEYS: '1' }).devKeyProblems).toEqual([]);
    const key = `0x${'11'.repeat(32)}`;
    const production = {
      ...shared,
      SECRET_PEPPER: 'p'.repeat(32),
      IDENTITY_JWKS_URL: 'https://id.example.com/jwks',
      WALLET_MASTER_KEY: key,
      ATTESTATION_PRIVATE_KEY: key,
      FACILITATOR_PRIVATE_KEY: `0x${'22'.repeat(32)}`,
    };
    expect(loadConfig(production).devKeyProblems).toEqual([]);
  });
});
