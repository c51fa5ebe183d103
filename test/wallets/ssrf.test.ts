import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/platform/safe-fetch.js';
import type { TestApp } from '../helpers/test-app.js';
import { maxPayment } from './fake-x402.js';
import { buildWalletsApp, call, createWallet, startUpstream, type Upstream } from './helpers.js';

// SSRF: every refused URL answers 400 `url_not_allowed` and no socket is ever opened towards it.
// Names resolve through an injected resolver, so "a name resolving to 10.0.0.1" needs no DNS.

const NAMES: Record<string, string[]> = {
  'internal.example': ['10.0.0.1'],
  'mixed.example': ['93.184.216.34', '10.0.0.1'],
  'metadata.example': ['169.254.169.254'],
};
const resolved: string[] = [];
const resolve: Resolver = async (host) => {
  resolved.push(host);
  const addresses = NAMES[host];
  if (!addresses) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
};

/** A TCP listener that only counts connections: proof that nothing reached it. */
async function tcpTrap(host: string): Promise<{ port: number; hits: () => number; close: () => Promise<void> } | null> {
  let hits = 0;
  const server = net.createServer((socket) => {
    hits += 1;
    socket.destroy();
  });
  try {
    await new Promise<void>((ok, fail) => server.once('error', fail).listen(0, host, ok));
  } catch {
    return null; // e.g. no IPv6 on this machine
  }
  return { port: (server.address() as AddressInfo).port, hits: () => hits, close: () => new Promise((ok) => server.close(() => ok())) };
}

const connects: string[] = [];
const originalConnect = net.Socket.prototype.connect;
let app: TestApp;
let secret: string;
let redirector: Upstream;
let trap4: NonNullable<Awaited<ReturnType<typeof tcpTrap>>>;
let trap6: Awaited<ReturnType<typeof tcpTrap>>;

beforeAll(async () => {
  trap4 = (await tcpTrap('127.0.0.1'))!;
  trap6 = await tcpTrap('::1');
  redirector = await startUpstream((req, res) => res.writeHead(302, { location: decodeURIComponent(req.url.slice('/to/'.length)) }).end());
  app = await buildWalletsApp({ env: { PAY_AND_CALL_ALLOW_HOSTS: redirector.host }, wallets: { resolve } });
  ({ secret } = await createWallet(app, await app.mgmtSecret(), 'ssrf'));
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { host?: string; port?: number } | number | undefined;
    connects.push(typeof options === 'object' ? `${options?.host}:${options?.port}` : `${String(args[1])}:${String(options)}`);
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
});
afterAll(async () => {
  net.Socket.prototype.connect = originalConnect;
  await app?.close();
  await redirector?.close();
  await trap4?.close();
  await trap6?.close();
});
beforeEach(() => {
  connects.length = 0;
  resolved.length = 0;
  redirector.requests.length = 0;
});

const pay = (url: string) => call(app, 'POST', '/v1/wallets/me/pay-and-call', secret, { url, maxPayment: maxPayment('100') });
// The app talks to its own devchain and database meanwhile: only sockets to the refused targets count.
const towardsTargets = () => connects.filter((c) => /^(10\.|169\.254\.|93\.)/.test(c) || [443, 80, trap4.port, trap6?.port].some((port) => c.endsWith(`:${port}`)));

async function expectRefused(url: string) {
  const answer = await pay(url);
  expect(answer.status, url).toBe(400);
  expect(answer.body).toMatchObject({ code: 1000, data: { reason: expect.stringMatching(/^blocked_/) } });
  expect(answer.body.message).toMatch(/not allowed/);
  return answer;
}

describe('pay-and-call SSRF guard', () => {
  it('refuses https://127.0.0.1 (any port) with no connection', async () => {
    await expectRefused('https://127.0.0.1/');
    await expectRefused(`https://127.0.0.1:${trap4.port}/`);
    await expectRefused(`https://2130706433:${trap4.port}/`); // 127.0.0.1 as a decimal integer
    await expectRefused(`https://0x7f.1:${trap4.port}/`);
    expect(trap4.hits()).toBe(0);
    expect(towardsTargets()).toEqual([]);
  });

  it('refuses the cloud metadata address, literal or by name', async () => {
    await expectRefused('https://169.254.169.254/latest/meta-data/');
    await expectRefused('http://169.254.169.254/latest/meta-data/');
    await expectRefused('https://metadata.example/');
    expect(towardsTargets()).toEqual([]);
  });

  it('refuses a name resolving to 10.0.0.1, and one mixing public and private records', async () => {
    await expectRefused('https://internal.example/paid');
    await expectRefused('https://mixed.example/paid');
    expect(resolved).toEqual(['internal.example', 'mixed.example']);
    expect(towardsTargets()).toEqual([]);
  });

  it('refuses https://[::1] and https://[::ffff:127.0.0.1]', async () => {
    await expectRefused('https://[::1]/');
    if (trap6) await expectRefused(`https://[::1]:${trap6.port}/`);
    await expectRefused(`https://[::ffff:127.0.0.1]:${trap4.port}/`);
    await expectRefused(`https://[::ffff:7f00:1]:${trap4.port}/`);
    expect(trap4.hits()).toBe(0);
    expect(trap6?.hits() ?? 0).toBe(0);
    expect(towardsTargets()).toEqual([]);
  });

  it('refuses a redirect to a private address without following it', async () => {
    for (const target of [`https://127.0.0.1:${trap4.port}/`, 'https://internal.example/x', 'http://169.254.169.254/latest', `http://[::ffff:127.0.0.1]:${trap4.port}/`]) {
      await expectRefused(`${redirector.origin}/to/${encodeURIComponent(target)}`);
    }
    expect(redirector.requests).toHaveLength(4); // the allow-listed hop was asked; the targets never
    expect(trap4.hits()).toBe(0);
    const port = redirector.host.split(':')[1];
    expect(connects.filter((c) => c.endsWith(`:${port}`))).toHaveLength(4); // the spy does see sockets
    expect(towardsTargets()).toEqual([]);
  });

  it('refuses plain http to a host that is not allow-listed', async () => {
    await expectRefused('http://internal.example/');
    expect(resolved).toEqual([]);
  });

  it('answers 502 (not 400) for a name that does not resolve', async () => {
    const answer = await pay('https://nowhere.example/');
    expect(answer.status).toBe(502);
  });
});
