import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createSafeFetch, parseAllowHosts, SafeFetchError, type Resolver } from './safe-fetch.js';

// ---------------------------------------------------------------------------------------------
// Test harness: real listeners, plus a record of every outbound socket connect in this process,
// so refusal tests can prove that nothing was even attempted.

type Server = {
  port: number;
  origin: string;
  connections: number;
  requests: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close: () => Promise<void>;
};

const servers: Server[] = [];

async function listen(
  host: string,
  handler: (req: http.IncomingMessage, res: http.ServerResponse, s: Server) => void = (_q, res) => res.end('ok'),
): Promise<Server> {
  const sockets = new Set<net.Socket>();
  const s = { connections: 0, requests: [] } as unknown as Server;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      s.requests.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      handler(req, res, s);
    });
  });
  server.on('connection', (sock) => {
    s.connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  s.port = (server.address() as AddressInfo).port;
  s.origin = `http://${host.includes(':') ? `[${host}]` : host}:${s.port}`;
  s.close = () =>
    new Promise((r) => {
      for (const sock of sockets) sock.destroy();
      server.close(() => r());
    });
  servers.push(s);
  return s;
}

const connects: string[] = [];
const originalConnect = net.Socket.prototype.connect;
/**
 * A loopback connection to a port none of this file's servers holds is another file's (the suite's workers run
 * files one after another in one process, and a finished file's client may still reconnect): not ours to count.
 */
const someoneElses = (host: string | undefined, port: number | string | undefined) =>
  (host === '127.0.0.1' || host === 'localhost' || host === '::1') && !servers.some((s) => s.port === Number(port));
beforeAll(() => {
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const opts = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { host?: string; port?: number } | undefined;
    if (!someoneElses(opts?.host, opts?.port)) connects.push(`${opts?.host}:${opts?.port}`);
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
});
afterAll(async () => {
  net.Socket.prototype.connect = originalConnect;
  await Promise.all(servers.map((s) => s.close()));
});
beforeEach(() => {
  connects.length = 0;
});

async function refusal(p: Promise<unknown>): Promise<SafeFetchError> {
  const err = await p.then(
    () => {
      throw new Error('expected the request to be refused');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SafeFetchError);
  return err as SafeFetchError;
}

const resolveTo =
  (...addresses: string[]): Resolver =>
  async () =>
    addresses.map((address) => ({ address, family: net.isIP(address) }));

// ---------------------------------------------------------------------------------------------

describe('parseAllowHosts', () => {
  it('splits on commas/whitespace, trims, lower-cases and drops empties', () => {
    expect(parseAllowHosts(' 127.0.0.1:8402, LocalHost ,,[::1]:9000 ')).toEqual(['127.0.0.1:8402', 'localhost', '[::1]:9000']);
    expect(parseAllowHosts(undefined)).toEqual([]);
    expect(parseAllowHosts('')).toEqual([]);
  });
});

describe('refusals happen before any socket is opened', () => {
  let trap4: Server;
  let trap6: Server;
  beforeAll(async () => {
    trap4 = await listen('127.0.0.1');
    trap6 = await listen('::1');
  });
  beforeEach(() => {
    trap4.connections = trap6.connections = 0;
  });
  afterEach(() => {
    expect(connects).toEqual([]);
    expect(trap4.connections).toBe(0);
    expect(trap6.connections).toBe(0);
  });

  const neverResolve: Resolver = vi.fn(async () => {
    throw new Error('resolver must not be called for IP literals');
  });
  const safeFetch = createSafeFetch({ allowHosts: [], resolve: neverResolve });

  it.each([
    ['loopback', () => `https://127.0.0.1:${trap4.port}/`],
    ['loopback (default port)', () => 'https://127.0.0.1/'],
    ['decimal IPv4 literal', () => `https://2130706433:${trap4.port}/`],
    ['hex IPv4 literal', () => `https://0x7f.0.0.1:${trap4.port}/`],
    ['octal IPv4 literal', () => `https://0177.0.0.1:${trap4.port}/`],
    ['short IPv4 literal', () => `https://127.1:${trap4.port}/`],
    ['unspecified 0.0.0.0 (reaches localhost on Linux)', () => `https://0.0.0.0:${trap4.port}/`],
    ['IPv6 loopback', () => `https://[::1]:${trap6.port}/`],
    ['IPv4-mapped IPv6 loopback', () => `https://[::ffff:127.0.0.1]:${trap4.port}/`],
    ['IPv4-mapped IPv6 loopback, hex', () => `https://[::ffff:7f00:1]:${trap4.port}/`],
    ['IPv4-compatible IPv6 loopback', () => `https://[::127.0.0.1]:${trap4.port}/`],
    ['IPv6 unspecified', () => `https://[::]:${trap6.port}/`],
    ['cloud metadata', () => 'https://169.254.169.254/latest/meta-data/'],
    ['cloud metadata, IPv6', () => 'https://[fd00:ec2::254]/'],
    ['Alibaba metadata', () => 'https://100.100.100.200/'],
    ['RFC1918', () => 'https://10.0.0.1/'],
    ['RFC1918 192.168', () => 'https://192.168.0.1/'],
    ['CGNAT', () => 'https://100.64.0.1/'],
    ['multicast', () => 'https://224.0.0.1/'],
    ['broadcast', () => 'https://255.255.255.255/'],
    ['link-local IPv6', () => 'https://[fe80::1]/'],
    ['unique-local IPv6', () => 'https://[fc00::1]/'],
    ['NAT64 embedding RFC1918', () => 'https://[64:ff9b::a00:1]/'],
    ['documentation range', () => 'https://192.0.2.1/'],
  ])('%s is blocked_address', async (_name, url) => {
    const err = await refusal(safeFetch(url()));
    expect(err.code).toBe('blocked_address');
    expect(neverResolve).not.toHaveBeenCalled();
  });

  it('refuses a name that resolves to 10.0.0.1', async () => {
    const resolve = vi.fn(resolveTo('10.0.0.1'));
    const err = await refusal(createSafeFetch({ allowHosts: [], resolve })('https://internal.example/'));
    expect(err.code).toBe('blocked_address');
    expect(resolve).toHaveBeenCalledExactlyOnceWith('internal.example');
  });

  it.each([
    ['public first', ['93.184.216.34', '10.0.0.1']],
    ['private first', ['127.0.0.1', '93.184.216.34']],
    ['mapped loopback in AAAA', ['2606:4700:4700::1111', '::ffff:127.0.0.1']],
  ])('refuses a name resolving to mixed public and private addresses (%s)', async (_n, addrs) => {
    const err = await refusal(createSafeFetch({ allowHosts: [], resolve: resolveTo(...addrs) })('https://mixed.example/'));
    expect(err.code).toBe('blocked_address');
  });

  it('refuses http:// to a public host without resolving it', async () => {
    const resolve = vi.fn(resolveTo('93.184.216.34'));
    const err = await refusal(createSafeFetch({ allowHosts: [], resolve })('http://example.com/'));
    expect(err.code).toBe('blocked_scheme');
    expect(resolve).not.toHaveBeenCalled();
  });

  it.each(['ftp://example.com/', 'file:///etc/passwd', 'gopher://127.0.0.1:70/', 'data:text/plain,hi'])(
    'refuses scheme %s',
    async (url) => {
      expect((await refusal(safeFetch(url))).code).toBe('blocked_scheme');
    },
  );

  it('refuses invalid URLs', async () => {
    expect((await refusal(safeFetch('not a url'))).code).toBe('invalid_url');
    expect((await refusal(safeFetch('https://'))).code).toBe('invalid_url');
  });

  it('reports DNS failures', async () => {
    const failing = createSafeFetch({ allowHosts: [], resolve: async () => Promise.reject(new Error('ENOTFOUND')) });
    expect((await refusal(failing('https://nope.example/'))).code).toBe('dns_failure');
    const empty = createSafeFetch({ allowHosts: [], resolve: async () => [] });
    expect((await refusal(empty('https://nope.example/'))).code).toBe('dns_failure');
    const garbage = createSafeFetch({ allowHosts: [], resolve: resolveTo('not-an-ip') });
    expect((await refusal(garbage('https://nope.example/'))).code).toBe('dns_failure');
  });

  it('an allow-list entry with a port admits only that port', async () => {
    const f = createSafeFetch({ allowHosts: ['127.0.0.1:1'] });
    expect((await refusal(f(`http://127.0.0.1:${trap4.port}/`))).code).toBe('blocked_scheme');
    expect((await refusal(f(`https://127.0.0.1:${trap4.port}/`))).code).toBe('blocked_address');
    expect((await refusal(f(`http://127.0.0.2:1/`))).code).toBe('blocked_scheme');
  });
});

describe('allow-listed local servers', () => {
  it('GET returns status, lower-cased headers (multi-value joined), body and url', async () => {
    const s = await listen('127.0.0.1', (_q, res) => {
      res.setHeader('X-Thing', ['a', 'b']);
      res.setHeader('Set-Cookie', ['c=1', 'd=2']);
      res.writeHead(201, { 'Content-Type': 'text/plain' });
      res.end('hello');
    });
    const f = createSafeFetch({ allowHosts: parseAllowHosts(`127.0.0.1:${s.port}`) });
    const res = await f(`${s.origin}/path?q=1`);
    expect(res.status).toBe(201);
    expect(res.body.toString()).toBe('hello');
    expect(res.url).toBe(`${s.origin}/path?q=1`);
    expect(res.headers['content-type']).toBe('text/plain');
    expect(res.headers['x-thing']).toBe('a, b');
    expect(res.headers['set-cookie']).toBe('c=1, d=2');
    expect(s.requests).toMatchObject([{ method: 'GET', url: '/path?q=1' }]);
  });

  it('POST sends Buffer and string bodies with content-length', async () => {
    const s = await listen('127.0.0.1', (q, res, srv) => res.end(`got ${srv.requests.at(-1)!.body}`));
    const f = createSafeFetch({ allowHosts: ['127.0.0.1'] }); // no port: any port on that host
    const r1 = await f(s.origin, { method: 'POST', body: Buffer.from('{"a":1}'), headers: { 'Content-Type': 'application/json' } });
    const r2 = await f(s.origin, { method: 'post', body: 'héllo' });
    expect(r1.body.toString()).toBe('got {"a":1}');
    expect(r2.body.toString()).toBe('got héllo');
    expect(s.requests[0]).toMatchObject({ method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '7' } });
    expect(s.requests[1]).toMatchObject({ method: 'POST', body: 'héllo', headers: { 'content-length': '6' } });
  });

  it('resolves a host name once, connects to that address, and keeps the name in Host', async () => {
    const s = await listen('127.0.0.1');
    // `.invalid` never resolves in real DNS (RFC 6761): success proves the socket used the
    // address from our resolver instead of a second lookup.
    const resolve = vi.fn(resolveTo('127.0.0.1'));
    const f = createSafeFetch({ allowHosts: [`pinned.invalid:${s.port}`], resolve });
    const res = await f(`http://PINNED.invalid:${s.port}/x`);
    expect(res.status).toBe(200);
    expect(resolve).toHaveBeenCalledExactlyOnceWith('pinned.invalid');
    expect(s.requests[0]!.headers.host).toBe(`pinned.invalid:${s.port}`);
    expect(connects).toEqual([`pinned.invalid:${s.port}`]);
  });

  it('uses the original host name for TLS SNI while connecting to the pinned address', async () => {
    const seen: string[] = [];
    const server = tls.createServer({
      SNICallback: (name, cb) => {
        seen.push(name);
        cb(new Error('no certificate in this test'));
      },
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const resolve = vi.fn(resolveTo('127.0.0.1'));
      const f = createSafeFetch({ allowHosts: [`tollgate.test:${port}`], resolve });
      const err = await refusal(f(`https://tollgate.test:${port}/`));
      expect(err.code).toBe('network_error'); // handshake aborted by the server
      expect(seen).toEqual(['tollgate.test']);
      expect(resolve).toHaveBeenCalledTimes(1);
    } finally {
      server.close();
    }
  });
});

describe('redirects', () => {
  it('re-validates every hop: refuses redirects to private or non-allow-listed targets with no request sent', async () => {
    const trap = await listen('127.0.0.2');
    const targets = [
      ['http://10.0.0.1/', 'blocked_scheme'],
      ['https://10.0.0.1/', 'blocked_address'],
      [`http://127.0.0.2:${trap.port}/`, 'blocked_scheme'],
      [`https://127.0.0.2:${trap.port}/`, 'blocked_address'],
      [`https://[::ffff:127.0.0.2]:${trap.port}/`, 'blocked_address'],
      ['https://metadata.example/', 'blocked_address'], // resolves to 169.254.169.254
      ['file:///etc/passwd', 'blocked_scheme'],
    ] as const;
    const origin = await listen('127.0.0.1', (q, res) => {
      res.writeHead(302, { Location: decodeURIComponent(q.url!.slice('/to/'.length)) }).end();
    });
    const resolve = vi.fn(resolveTo('169.254.169.254'));
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${origin.port}`], resolve });
    for (const [target, code] of targets) {
      connects.length = 0;
      const err = await refusal(f(`${origin.origin}/to/${encodeURIComponent(target)}`));
      expect(err.code, target).toBe(code);
      expect(connects, target).toEqual([`127.0.0.1:${origin.port}`]); // only the allow-listed origin
    }
    expect(trap.connections).toBe(0);
    expect(trap.requests).toHaveLength(0);
    expect(origin.requests).toHaveLength(targets.length);
  });

  it('follows relative and absolute redirects between allow-listed servers', async () => {
    const b = await listen('127.0.0.1', (q, res) => res.end(`b${q.url}`));
    const a = await listen('127.0.0.1', (q, res) => {
      if (q.url === '/start') res.writeHead(301, { Location: '/next' }).end();
      else res.writeHead(308, { Location: `${b.origin}/final` }).end('ignored');
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`] });
    const res = await f(`${a.origin}/start`);
    expect(res).toMatchObject({ status: 200, url: `${b.origin}/final` });
    expect(res.body.toString()).toBe('b/final');
  });

  it.each([
    [301, 'POST', 'GET', ''],
    [302, 'POST', 'GET', ''],
    [303, 'POST', 'GET', ''],
    [303, 'PUT', 'GET', ''],
    [302, 'PUT', 'PUT', 'payload'],
    [307, 'POST', 'POST', 'payload'],
    [308, 'PUT', 'PUT', 'payload'],
  ])('%i after %s continues as %s', async (status, method, nextMethod, nextBody) => {
    const s = await listen('127.0.0.1', (q, res) => {
      if (q.url === '/from') res.writeHead(status, { Location: '/to' }).end();
      else res.end('done');
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    await f(`${s.origin}/from`, { method, body: 'payload', headers: { 'content-type': 'text/plain' } });
    const second = s.requests[1]!;
    expect(second).toMatchObject({ method: nextMethod, url: '/to', body: nextBody });
    expect(second.headers['content-type']).toBe(nextBody ? 'text/plain' : undefined);
  });

  it('drops Authorization (and Cookie) on cross-origin redirects only', async () => {
    const other = await listen('127.0.0.1');
    const s = await listen('127.0.0.1', (q, res) => {
      if (q.url === '/same') res.writeHead(302, { Location: '/cross' }).end();
      else if (q.url === '/cross') res.writeHead(302, { Location: `${other.origin}/` }).end();
      else res.end();
    });
    const f = createSafeFetch({ allowHosts: ['127.0.0.1'] });
    await f(`${s.origin}/same`, { headers: { Authorization: 'Bearer secret', Cookie: 'sid=1', 'X-Keep': 'yes' } });
    expect(s.requests[1]!.headers).toMatchObject({ authorization: 'Bearer secret', cookie: 'sid=1' });
    expect(other.requests[0]!.headers.authorization).toBeUndefined();
    expect(other.requests[0]!.headers.cookie).toBeUndefined();
    expect(other.requests[0]!.headers['x-keep']).toBe('yes');
  });

  it('stops after maxRedirects (default 5)', async () => {
    const s = await listen('127.0.0.1', (q, res) => {
      const n = Number(q.url!.slice(1));
      res.writeHead(302, { Location: `/${n + 1}` }).end();
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    expect((await refusal(f(`${s.origin}/0`))).code).toBe('too_many_redirects');
    expect(s.requests).toHaveLength(6); // the original request + 5 redirects
    s.requests.length = 0;
    expect((await refusal(f(`${s.origin}/0`, { maxRedirects: 1 }))).code).toBe('too_many_redirects');
    expect(s.requests).toHaveLength(2);
  });

  it('allows exactly maxRedirects hops', async () => {
    const s = await listen('127.0.0.1', (q, res) => {
      const n = Number(q.url!.slice(1));
      if (n < 5) res.writeHead(302, { Location: `/${n + 1}` }).end();
      else res.end('landed');
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    expect((await f(`${s.origin}/0`)).body.toString()).toBe('landed');
  });
});

describe('timeouts and limits', () => {
  it('times out when the server never answers', async () => {
    const s = await listen('127.0.0.1', () => {}); // reads the request, never responds
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    const started = Date.now();
    const err = await refusal(f(s.origin, { timeoutMs: 200 }));
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(s.requests).toHaveLength(1);
  });

  it('times out when the body stalls mid-stream', async () => {
    const s = await listen('127.0.0.1', (_q, res) => {
      res.writeHead(200);
      res.write('partial');
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    expect((await refusal(f(s.origin, { timeoutMs: 200 }))).code).toBe('timeout');
  });

  it('honours the caller abort signal', async () => {
    const s = await listen('127.0.0.1', () => {});
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const err = await refusal(f(s.origin, { signal: ac.signal }));
    expect(err.code).toBe('network_error');
    expect(err.message).toMatch(/aborted/);
  });

  it('aborts a streamed response that exceeds maxResponseBytes', async () => {
    let written = 0;
    const s = await listen('127.0.0.1', (_q, res) => {
      res.writeHead(200); // chunked: no content-length to reject up front
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (written < 50 * 1024 * 1024 && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    const err = await refusal(f(s.origin, { maxResponseBytes: 64 * 1024 }));
    expect(err.code).toBe('too_large');
    expect(written).toBeLessThan(50 * 1024 * 1024); // we hung up rather than draining it all
  });

  it('rejects a declared content-length above the cap, accepts exactly the cap', async () => {
    const s = await listen('127.0.0.1', (q, res) => res.end(Buffer.alloc(q.url === '/big' ? 1025 : 1024)));
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${s.port}`] });
    expect((await refusal(f(`${s.origin}/big`, { maxResponseBytes: 1024 }))).code).toBe('too_large');
    expect((await f(`${s.origin}/ok`, { maxResponseBytes: 1024 })).body).toHaveLength(1024);
  });

  it('applies the connect timeout to a TLS handshake that never completes', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((sock) => sockets.push(sock)); // accepts TCP, never speaks TLS
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    try {
      const f = createSafeFetch({ allowHosts: [`127.0.0.1:${port}`], connectTimeoutMs: 150 });
      const err = await refusal(f(`https://127.0.0.1:${port}/`, { timeoutMs: 10_000 }));
      expect(err.code).toBe('timeout');
      expect(err.message).toMatch(/connect/);
    } finally {
      sockets.forEach((s) => s.destroy());
      silent.close();
    }
  });

  it('reports connection failures as network_error', async () => {
    const s = await listen('127.0.0.1');
    const port = s.port;
    await s.close();
    const f = createSafeFetch({ allowHosts: [`127.0.0.1:${port}`] });
    expect((await refusal(f(`http://127.0.0.1:${port}/`))).code).toBe('network_error');
  });
});
