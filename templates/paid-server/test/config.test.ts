import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TERMS, loadConfig } from '../src/config.js';

const PAY_TO = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

const problems = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
};

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadConfig({ X402_PAY_TO: PAY_TO })).toEqual({
      payTo: PAY_TO,
      publicUrl: 'http://localhost:4021',
      port: 4021,
      facilitatorUrl: 'http://127.0.0.1:8403',
      corsOrigin: '*',
      terms: DEFAULT_TERMS,
    });
    expect(DEFAULT_TERMS).toMatchObject({
      network: 'eip155:4663',
      asset: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168',
      price: '100',
      maxTimeoutSeconds: 300,
      eip712: { name: 'Global Dollar', version: '1' },
    });
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ X402_PAY_TO: PAY_TO, PORT: '', PUBLIC_URL: ' ' }).port).toBe(4021);
  });

  it('checksum-normalizes a lower- or upper-case pay-to address', () => {
    expect(loadConfig({ X402_PAY_TO: PAY_TO.toLowerCase() }).payTo).toBe(PAY_TO);
    expect(loadConfig({ X402_PAY_TO: `0x${PAY_TO.slice(2).toUpperCase()}` }).payTo).toBe(PAY_TO);
    expect(loadConfig({ X402_PAY_TO: ` ${PAY_TO} ` }).payTo).toBe(PAY_TO);
  });

  it('requires X402_PAY_TO and refuses bad addresses', () => {
    expect(problems({})).toEqual([expect.stringMatching(/X402_PAY_TO is required/)]);
    expect(problems({ X402_PAY_TO: '' })[0]).toMatch(/X402_PAY_TO is required/);
    expect(problems({ X402_PAY_TO: '0x1234' })[0]).toMatch(/not an EVM address/);
    expect(problems({ X402_PAY_TO: PAY_TO.slice(2) })[0]).toMatch(/not an EVM address/);
    const badChecksum = PAY_TO.replace('C51812dc', 'c51812dc');
    expect(problems({ X402_PAY_TO: badChecksum })[0]).toMatch(/checksum/);
    expect(problems({ X402_PAY_TO: `0x${'0'.repeat(40)}` })[0]).toMatch(/zero address/);
  });

  it('accepts PUBLIC_URL as an origin only', () => {
    expect(loadConfig({ X402_PAY_TO: PAY_TO, PUBLIC_URL: 'https://api.example.com' }).publicUrl).toBe('https://api.example.com');
    expect(loadConfig({ X402_PAY_TO: PAY_TO, PUBLIC_URL: 'https://API.example.com:8443/' }).publicUrl).toBe('https://api.example.com:8443');
    for (const bad of ['https://api.example.com/v1', 'https://api.example.com/?a=1', 'https://api.example.com?', 'https://api.example.com#x',
      'ftp://api.example.com', 'api.example.com', 'https://user:pw@api.example.com']) {
      expect(problems({ X402_PAY_TO: PAY_TO, PUBLIC_URL: bad })[0], bad).toMatch(/PUBLIC_URL/);
    }
  });

  it('validates PORT, FACILITATOR_URL and CORS_ORIGIN', () => {
    const env = { X402_PAY_TO: PAY_TO };
    expect(loadConfig({ ...env, PORT: '0' }).port).toBe(0);
    for (const bad of ['-1', '65536', '80a', '4.5']) expect(problems({ ...env, PORT: bad })[0]).toMatch(/PORT/);
    expect(loadConfig({ ...env, FACILITATOR_URL: 'https://x402.org/facilitator/' }).facilitatorUrl).toBe('https://x402.org/facilitator');
    expect(problems({ ...env, FACILITATOR_URL: 'http://127.0.0.1:8403/?x' })[0]).toMatch(/FACILITATOR_URL/);
    expect(problems({ ...env, FACILITATOR_URL: 'nope' })[0]).toMatch(/FACILITATOR_URL/);
    expect(loadConfig({ ...env, CORS_ORIGIN: 'https://a.example, http://localhost:3000' }).corsOrigin).toEqual([
      'https://a.example',
      'http://localhost:3000',
    ]);
    expect(problems({ ...env, CORS_ORIGIN: 'https://a.example/app' })[0]).toMatch(/CORS_ORIGIN/);
  });

  it('reports every problem at once', () => {
    expect(problems({ PORT: 'x', PUBLIC_URL: 'http://h/p' })).toHaveLength(3);
  });
});
