import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { moduleFactories } from '../../src/modules/index.js';
import type { ModuleFactory } from '../../src/modules/module.js';
import { createWalletsModule, walletsModule, type WalletsModuleOptions } from '../../src/modules/wallets/routes.js';
import { buildTestApp, type TestApp, type TestAppOptions } from '../helpers/test-app.js';

/** The whole service, with the wallets module built from `wallets` options instead of its defaults. */
export function buildWalletsApp(options: TestAppOptions & { wallets?: WalletsModuleOptions } = {}): Promise<TestApp> {
  const factories: ModuleFactory[] = options.wallets
    ? moduleFactories.map((factory) => (factory === walletsModule ? createWalletsModule(options.wallets) : factory))
    : moduleFactories;
  return buildTestApp({ ...options, factories: options.factories ?? factories });
}

export interface Call {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** An API call through inject, with a bearer credential. */
export async function call(app: TestApp, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, secret?: string, payload?: unknown): Promise<Call> {
  const response = await app.origins.api!.inject({
    method,
    url,
    headers: secret ? { authorization: `Bearer ${secret}` } : {},
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: response.statusCode, body: response.json() };
}

/** Creates a wallet and returns it with its first credential's secret. */
export async function createWallet(app: TestApp, mgmt: string, externalId: string, extra: Record<string, unknown> = {}) {
  const created = await call(app, 'POST', '/v1/wallets', mgmt, { externalId, name: `wallet ${externalId}`, ...extra });
  if (created.status !== 201) throw new Error(`wallet create answered ${created.status}: ${JSON.stringify(created.body)}`);
  return { wallet: created.body.data.wallet, secret: created.body.data.credential.secret as string, credential: created.body.data.credential };
}

export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** What the answer of a paid pay-and-call says of its payment, and what the chain then made of it. */
export interface PaidPayment {
  id: string;
  status: string;
  amount: string;
  transaction: string | null;
  settlement: Record<string, unknown> | null;
  [field: string]: unknown;
}

/**
 * The payment of a pay-and-call the seller settled, once the chain confirms it. The answer does not wait for the
 * chain: it carries the payment `pending`, `transaction` null and the seller's transaction in `settlement`; this
 * throws unless the answer is that, then waits (GET /v1/wallets/me/payments) until the payment is `settled` with the
 * chain's transaction, and throws if it never is. `payment`: the answer's `data.payment` (any door: REST, MCP, an
 * agent's tool); `secret`: a credential of the paying wallet.
 */
export async function settledPayment(app: TestApp, secret: string, payment: PaidPayment | null | undefined, timeoutMs = 20_000): Promise<PaidPayment> {
  const claimed = payment?.settlement?.transaction;
  if (!payment || payment.status !== 'pending' || payment.transaction !== null || payment.settlement?.success !== true || typeof claimed !== 'string') {
    throw new Error(`expected the answer's payment pending with the seller's transaction in settlement, got ${JSON.stringify(payment)}`);
  }
  let last: PaidPayment | undefined;
  try {
    return await waitFor(async () => {
      const listed = (await call(app, 'GET', '/v1/wallets/me/payments?limit=100', secret)).body.data as PaidPayment[];
      last = listed.find((p) => p.id === payment.id);
      return last?.status === 'settled' && last.transaction === claimed && last;
    }, timeoutMs);
  } catch {
    throw new Error(`payment ${payment.id} was not confirmed settled on chain within ${timeoutMs} ms: ${JSON.stringify(last)}`);
  }
}

/**
 * An agent's newest payment once the chain has confirmed it: the tool's answer carries it pending (no chain read
 * before answering); this waits until none of the agent's payments (as `list` reads them, newest first) is open,
 * and throws unless the newest is settled.
 */
export async function newestAgentPaymentSettled(list: () => Promise<Array<{ id: string; status: string; transaction: string | null }>>) {
  const listed = await waitFor(async () => {
    const all = await list();
    return all.every((p) => p.status !== 'pending' && p.status !== 'unknown') && all;
  }, 20_000);
  expect(listed[0]).toMatchObject({ status: 'settled', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
  return listed[0]!;
}

/**
 * A port free now, for a process that must listen on a known port (and keep it across a restart). Picked below
 * Linux's ephemeral range (32768-60999): a port-0 listener or an outgoing connection elsewhere in the suite
 * can take any port of that range between this pick and the listen (a crash test once failed EADDRINUSE so).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await canListen(port)) return port;
    if (attempt >= 50) throw new Error('no free port below the ephemeral range after 50 tries');
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export interface Recorded {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Upstream {
  origin: string;
  host: string;
  requests: Recorded[];
  connections: number;
  close(): Promise<void>;
}

/** A loopback HTTP server that records every request and answers with `handler`. */
export async function startUpstream(handler: (req: Recorded, res: http.ServerResponse, index: number) => void, host = '127.0.0.1'): Promise<Upstream> {
  const sockets = new Set<net.Socket>();
  const upstream = { requests: [] as Recorded[], connections: 0 } as Upstream;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      upstream.requests.push(recorded);
      handler(recorded, res, upstream.requests.length - 1);
    });
  });
  server.on('connection', (socket) => {
    upstream.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  upstream.host = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  upstream.origin = `http://${upstream.host}`;
  upstream.close = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return upstream;
}
