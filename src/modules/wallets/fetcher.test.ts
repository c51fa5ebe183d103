import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import type { AppContext } from '../../context.js';
import { allowHosts } from './fetcher.js';

const ctx = (env: Record<string, string>) =>
  ({ config: loadConfig(env), urls: { api: 'http://127.0.0.1:8402', facilitator: '', relay: '', assets: '' } }) as Pick<AppContext, 'config' | 'urls'>;

describe('pay-and-call allow list', () => {
  it('is the configured list when PAY_AND_CALL_ALLOW_HOSTS is set', () => {
    expect(allowHosts(ctx({ PAY_AND_CALL_ALLOW_HOSTS: 'Example.test:8080, [::1]' }))).toEqual(['example.test:8080', '[::1]']);
  });

  it('is our own API origin (host:port) on the embedded chain when unset', () => {
    expect(allowHosts(ctx({}))).toEqual(['127.0.0.1:8402']);
  });

  it('is empty in production (CHAIN_RPC_URL set) when unset', () => {
    expect(allowHosts(ctx({ CHAIN_RPC_URL: 'https://rpc.example' }))).toEqual([]);
  });
});
