import { isEmbeddedChain } from '../../chain/settings.js';
import type { AppContext } from '../../context.js';
import { createSafeFetch, parseAllowHosts, type Resolver } from '../../platform/safe-fetch.js';
import type { SafeFetch } from './pay-and-call.js';

/**
 * The SSRF-guarded client of pay-and-call. PAY_AND_CALL_ALLOW_HOSTS lists hosts reachable over http
 * and exempt from the public-address rule. Unset in embedded mode (no CHAIN_RPC_URL), our own API
 * origin is allow-listed, so `/x402-test/ping` is payable out of the box; production allows nothing.
 */
export function payAndCallFetch(ctx: AppContext, resolve?: Resolver): SafeFetch {
  let built: { key: string; fetch: SafeFetch } | null = null;
  return (url, options) => {
    // The API's own port is known only once it listens, so the list is settled at first use.
    const hosts = allowHosts(ctx);
    const key = hosts.join(',');
    if (built?.key !== key) built = { key, fetch: createSafeFetch({ allowHosts: hosts, resolve }) };
    return built.fetch(url, options);
  };
}

/** The effective allow list (exported for its test). */
export function allowHosts(ctx: Pick<AppContext, 'config' | 'urls'>): string[] {
  const configured = parseAllowHosts(ctx.config.payAndCall.allowHosts);
  if (configured.length > 0 || !isEmbeddedChain(ctx.config)) return configured;
  return [new URL(ctx.urls.api).host.toLowerCase()];
}
