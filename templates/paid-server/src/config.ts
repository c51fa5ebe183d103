import { getAddress, isAddress, zeroAddress } from 'viem';

/** Payment terms of the template's paid route. Edit them here (or per route in routes.ts). */
export const DEFAULT_TERMS = {
  scheme: 'exact',
  network: 'eip155:4663', // Robinhood Chain
  asset: '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168', // USDG, 6 decimals
  // The chain has no x402 default asset, so the EIP-712 domain of USDG must travel in `extra`.
  eip712: { name: 'Global Dollar', version: '1' },
  price: '100', // atomic units: 0.0001 USDG
  maxTimeoutSeconds: 300,
} as const;

export interface Config {
  payTo: `0x${string}`;
  publicUrl: string;
  port: number;
  facilitatorUrl: string;
  /** `*` or an explicit list of browser origins. */
  corsOrigin: '*' | string[];
  terms: typeof DEFAULT_TERMS;
}

export const DEFAULTS = {
  PUBLIC_URL: 'http://localhost:4021',
  PORT: '4021',
  FACILITATOR_URL: 'http://127.0.0.1:8403', // a local Tollgate's facilitator origin
  CORS_ORIGIN: '*',
} as const;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reads the environment; throws one ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  // An empty value (e.g. `PORT=` in .env) means "use the default".
  const get = (name: keyof typeof DEFAULTS) => env[name]?.trim() || DEFAULTS[name];
  const check = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (error) {
      problems.push((error as Error).message);
      return undefined;
    }
  };
  const payTo = check(() => parsePayTo(env.X402_PAY_TO));
  const publicUrl = check(() => parseOrigin('PUBLIC_URL', get('PUBLIC_URL')));
  const port = check(() => parsePort(get('PORT')));
  const facilitatorUrl = check(() => parseFacilitatorUrl(get('FACILITATOR_URL')));
  const corsOrigin = check(() => parseCorsOrigin(get('CORS_ORIGIN')));
  if (problems.length > 0) throw new ConfigError(problems);
  return { payTo: payTo!, publicUrl: publicUrl!, port: port!, facilitatorUrl: facilitatorUrl!, corsOrigin: corsOrigin!, terms: DEFAULT_TERMS };
}

export function parsePayTo(raw: string | undefined): `0x${string}` {
  const value = raw?.trim();
  if (!value) throw new Error('X402_PAY_TO is required: the EVM address that receives payments (0x followed by 40 hex digits)');
  if (!isAddress(value, { strict: false })) throw new Error(`X402_PAY_TO is not an EVM address: ${JSON.stringify(value)}`);
  // Single-case addresses carry no checksum; a mixed-case one with a wrong checksum is usually a typo.
  const checksumOk: boolean = isAddress(value); // strict: lower case passes, mixed case must checksum
  if (!checksumOk && value.slice(2) !== value.slice(2).toUpperCase()) {
    throw new Error(`X402_PAY_TO has an invalid EIP-55 checksum (a typo?): ${value}`);
  }
  const address = getAddress(value);
  if (address === zeroAddress) throw new Error('X402_PAY_TO is the zero address: payments to it would be lost');
  return address;
}

/** An http(s) origin: scheme, host and optional port, nothing else. */
export function parseOrigin(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`${name} is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`${name} must use http or https: ${raw}`);
  if (url.username || url.password) throw new Error(`${name} must not carry credentials`);
  // `new URL` drops an empty `?` or `#`, so look at the raw text as well.
  if (url.pathname !== '/' || url.search || url.hash || /[?#]/.test(raw)) {
    throw new Error(`${name} must be an origin only (no path, query or fragment), e.g. ${url.origin}: got ${raw}`);
  }
  return url.origin;
}

export function parsePort(raw: string): number {
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`PORT must be an integer from 0 to 65535: ${JSON.stringify(raw)}`);
  return port;
}

/** A facilitator may live under a path (e.g. https://x402.org/facilitator); no query or fragment. */
export function parseFacilitatorUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`FACILITATOR_URL is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`FACILITATOR_URL must use http or https: ${raw}`);
  if (url.search || url.hash || /[?#]/.test(raw)) throw new Error(`FACILITATOR_URL must not have a query or fragment: ${raw}`);
  return url.href.replace(/\/+$/, '');
}

export function parseCorsOrigin(raw: string): '*' | string[] {
  if (raw === '*') return '*';
  const origins = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (origins.length === 0) throw new Error('CORS_ORIGIN must be * or a comma-separated list of origins');
  return origins.map((origin) => parseOrigin('CORS_ORIGIN', origin));
}
