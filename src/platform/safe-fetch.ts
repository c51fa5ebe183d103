// SSRF-guarded HTTP client for user-supplied URLs.
//
// Every hop (the first URL and each redirect) is vetted before any socket is opened:
//  1. scheme: https, or http only for allow-listed hosts;
//  2. address: the host is resolved exactly once and EVERY resolved address must be
//     public (unless allow-listed). Refusing when any address is non-public (rather than
//     picking a public one) keeps the decision independent of address ordering and
//     treats a name mixing public and private records as hostile or misconfigured;
//  3. connection: the socket is pinned to the vetted address through a custom `lookup`,
//     so there is no second DNS query to rebind. The original hostname is still used
//     for the Host header and TLS SNI/certificate verification.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { isIP } from 'node:net';
import { isPublicAddress } from './ip-policy.js';

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

export interface SafeFetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxRedirects?: number;
  signal?: AbortSignal;
  /** The caller's own rule on every hop (the first URL and each redirect), before it is vetted or sent: a throw stops the call and is rethrown as is. */
  beforeHop?: (url: URL) => void;
}

export interface SafeFetchPolicy {
  /** `host` or `host:port` entries admitted over http and exempt from the address check. */
  allowHosts: string[];
  resolve?: Resolver;
  connectTimeoutMs?: number;
}

export interface SafeResponse {
  status: number;
  /** Lower-case names; repeated headers (set-cookie included) are joined with ', '. */
  headers: Record<string, string>;
  body: Buffer;
  /** Final URL after redirects. */
  url: string;
}

export type SafeFetchErrorCode =
  | 'blocked_scheme'
  | 'blocked_address'
  | 'dns_failure'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'network_error'
  | 'invalid_url';

export class SafeFetchError extends Error {
  constructor(
    public readonly code: SafeFetchErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SafeFetchError';
  }
}

export const DEFAULT_TIMEOUT_MS = 15_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_MAX_REDIRECTS = 5;

/** Parses `PAY_AND_CALL_ALLOW_HOSTS`-style lists: comma/whitespace separated, case-insensitive. */
export function parseAllowHosts(value: string | undefined): string[] {
  return (value ?? '')
    .split(/[\s,]+/)
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

type AllowEntry = { host: string; port: string | null };

// Canonicalise through the WHATWG parser so `127.1`, `[::1]` and `::1` match the URL's hostname.
function parseAllowEntry(entry: string): AllowEntry | null {
  const m = entry.match(/^\[([^\]]+)\](?::(\d+))?$/) ?? entry.match(/^([^:]+)(?::(\d+))?$/);
  const [host, port] = m ? [m[1]!, m[2] ?? null] : [entry, null]; // bare IPv6 without brackets
  try {
    const hostname = new URL(`http://${host.includes(':') ? `[${host}]` : host}`).hostname;
    return { host: hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return null;
  }
}

function effectivePort(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

const defaultResolve: Resolver = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

// Request headers describing a body; dropped when a redirect turns the request into a GET.
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
// Credentials must not leak to another origin (fetch drops Authorization; we also drop cookies).
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

export function createSafeFetch(policy: SafeFetchPolicy) {
  const allow = policy.allowHosts.map(parseAllowEntry).filter((e): e is AllowEntry => e !== null);
  const resolve = policy.resolve ?? defaultResolve;
  const connectTimeoutMs = policy.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;

  const isAllowed = (url: URL, host: string) =>
    allow.some((e) => e.host === host && (e.port === null || e.port === effectivePort(url)));

  /** Validates one hop and returns the address to connect to; throws before any I/O to it. */
  async function vet(url: URL, signal: AbortSignal): Promise<{ host: string; address: string; family: number }> {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new SafeFetchError('blocked_scheme', `scheme ${url.protocol} is not allowed`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const allowed = isAllowed(url, host);
    if (url.protocol === 'http:' && !allowed) {
      throw new SafeFetchError('blocked_scheme', `http is only allowed for allow-listed hosts (${url.host})`);
    }
    let addresses: { address: string; family: number }[];
    if (isIP(host)) {
      addresses = [{ address: host, family: isIP(host) }];
    } else {
      try {
        addresses = await abortable(resolve(host), signal);
      } catch (err) {
        if (err instanceof SafeFetchError) throw err;
        throw new SafeFetchError('dns_failure', `could not resolve ${host}`, { cause: err });
      }
      if (!addresses.length || addresses.some((a) => !isIP(a.address))) {
        throw new SafeFetchError('dns_failure', `no usable address for ${host}`);
      }
    }
    if (!allowed) {
      const bad = addresses.find((a) => !isPublicAddress(a.address));
      if (bad) throw new SafeFetchError('blocked_address', `${host} resolves to non-public address ${bad.address}`);
    }
    const { address } = addresses[0]!;
    return { host, address, family: isIP(address) };
  }

  return async function safeFetch(input: string, options: SafeFetchOptions = {}): Promise<SafeResponse> {
    const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

    // One controller covers the whole call (DNS, connects, redirects, body) and the caller's signal.
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new SafeFetchError('timeout', `request timed out after ${timeoutMs}ms`)),
      timeoutMs,
    );
    const onCallerAbort = () =>
      controller.abort(new SafeFetchError('network_error', 'request aborted by caller', { cause: options.signal?.reason }));
    if (options.signal?.aborted) onCallerAbort();
    options.signal?.addEventListener('abort', onCallerAbort, { once: true });

    let method = (options.method ?? 'GET').toUpperCase();
    let body = options.body;
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.headers ?? {})) headers[k.toLowerCase()] = v;
    delete headers['host']; // always derived from the URL being requested

    let refusedHop: unknown;
    try {
      let url = parseUrl(input);
      for (let redirects = 0; ; redirects++) {
        try {
          options.beforeHop?.(url);
        } catch (error) {
          refusedHop = error;
          throw error;
        }
        const target = await vet(url, controller.signal);
        const res = await send(url, target, method, headers, body, controller.signal, connectTimeoutMs);
        const location = res.headers['location'];
        if (!isRedirect(res.statusCode) || !location) {
          return {
            status: res.statusCode ?? 0,
            headers: joinHeaders(res),
            body: await readBody(res, maxBytes, controller.signal),
            url: url.href,
          };
        }
        res.destroy(); // redirect bodies are not needed
        if (redirects >= maxRedirects) {
          throw new SafeFetchError('too_many_redirects', `more than ${maxRedirects} redirects`);
        }
        const next = parseUrl(location, url);
        const status = res.statusCode!;
        if (status === 303 ? method !== 'HEAD' : (status === 301 || status === 302) && method === 'POST') {
          method = 'GET';
          body = undefined;
          for (const h of BODY_HEADERS) delete headers[h];
        }
        if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
        url = next;
      }
    } catch (err) {
      if (refusedHop !== undefined && err === refusedHop) throw err;
      if (controller.signal.aborted && controller.signal.reason instanceof SafeFetchError) throw controller.signal.reason;
      if (err instanceof SafeFetchError) throw err;
      throw new SafeFetchError('network_error', (err as Error)?.message ?? String(err), { cause: err });
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onCallerAbort);
      controller.abort(); // tears down anything still open
    }
  };
}

function parseUrl(input: string, base?: URL): URL {
  try {
    return new URL(input, base);
  } catch (err) {
    throw new SafeFetchError('invalid_url', `invalid URL: ${input}`, { cause: err });
  }
}

function isRedirect(status: number | undefined): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

function send(
  url: URL,
  target: { host: string; address: string; family: number },
  method: string,
  headers: Record<string, string>,
  body: Buffer | string | undefined,
  signal: AbortSignal,
  connectTimeoutMs: number,
): Promise<http.IncomingMessage> {
  // Pin the connection to the vetted address; Node calls this instead of DNS for hostnames
  // (and skips it for IP literals, which were vetted directly).
  const lookup = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (opts?.all) cb(null, [{ address: target.address, family: target.family }]);
    else cb(null, target.address, target.family);
  }) as unknown as LookupFunction;

  const reqHeaders = { ...headers };
  if (body !== undefined) reqHeaders['content-length'] = String(Buffer.byteLength(body));

  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request({
      protocol: url.protocol,
      host: target.host,
      port: effectivePort(url),
      path: url.pathname + url.search,
      method,
      headers: reqHeaders,
      lookup,
      agent: false, // no pooled sockets: each request connects to its own vetted address
    });
    const onAbort = () => req.destroy(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    req.once('close', () => signal.removeEventListener('abort', onAbort));

    // Connect timeout covers TCP and, for https, the TLS handshake (agent:false => fresh socket).
    req.once('socket', (socket: Socket) => {
      const t = setTimeout(
        () => req.destroy(new SafeFetchError('timeout', `connect timed out after ${connectTimeoutMs}ms`)),
        connectTimeoutMs,
      );
      socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(t));
      socket.once('close', () => clearTimeout(t));
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end(body);
  });
}

function joinHeaders(res: http.IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headersDistinct)) if (v) out[k] = v.join(', ');
  return out;
}

function readBody(res: http.IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new SafeFetchError('too_large', `response exceeds ${maxBytes} bytes`);
    if (Number(res.headers['content-length']) > maxBytes) {
      res.destroy();
      return reject(tooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onAbort = () => res.destroy(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return res.destroy(tooLarge());
      chunks.push(chunk);
    });
    res.once('end', () => resolve(Buffer.concat(chunks)));
    res.once('error', reject);
    res.once('close', () => {
      signal.removeEventListener('abort', onAbort);
      if (!res.complete) reject(new SafeFetchError('network_error', 'connection closed before the response completed'));
    });
  });
}

// Races a promise against the abort signal so a slow resolver cannot outlive the timeout.
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
