import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { createPublicClient, HttpRequestError, TimeoutError } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransportError } from './errors.js';
import { rpcTransport } from './rpc-fetch.js';

type Answer = (body: string, request: http.IncomingMessage, response: http.ServerResponse) => void;
let answer: Answer;
const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
let server: http.Server;
let url: string;

// A JSON-RPC node: eth_chainId and eth_blockNumber, one call or a batch.
const node: Answer = (body, _request, response) => {
  const calls = JSON.parse(body) as Array<{ id: number; method: string }> | { id: number; method: string };
  const one = (c: { id: number; method: string }) => ({ jsonrpc: '2.0', id: c.id, result: c.method === 'eth_chainId' ? '0x7a69' : '0x10' });
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify(Array.isArray(calls) ? calls.map(one) : one(calls)));
};

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      seen.push({ headers: request.headers, body });
      answer(body, request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('rpcTransport', () => {
  it('carries single and batched JSON-RPC calls, with the JSON content type', async () => {
    answer = node;
    seen.length = 0;
    const client = createPublicClient({ transport: rpcTransport(url, { batch: { batchSize: 8, wait: 0 } }) });
    const [chainId, block] = await Promise.all([client.getChainId(), client.getBlockNumber({ cacheTime: 0 })]);
    expect([chainId, block]).toEqual([31337, 16n]);
    expect(seen).toHaveLength(1);
    expect(JSON.parse(seen[0]!.body)).toHaveLength(2);
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(await createPublicClient({ transport: rpcTransport(url) }).getChainId()).toBe(31337);
  });

  it('sends credentials in the URL as basic auth, not in the path', async () => {
    answer = node;
    seen.length = 0;
    const withCredentials = url.replace('http://', 'http://alice:s3cret@');
    await createPublicClient({ transport: rpcTransport(withCredentials) }).getChainId();
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
  });

  it("passes a node's JSON-RPC error through as the node's, and an HTTP failure as a transport error", async () => {
    answer = (body, _request, response) => {
      const { id } = JSON.parse(body) as { id: number };
      response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } }));
    };
    const client = createPublicClient({ transport: rpcTransport(url, { retryCount: 0 }) });
    const rejected = await client.getChainId().catch((error: unknown) => error);
    expect(String(rejected)).toContain('header not found');

    answer = (_body, _request, response) => response.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>');
    const failed = await client.getChainId().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(HttpRequestError);
    expect((failed as HttpRequestError).status).toBe(502);
    expect(isTransportError(failed)).toBe(true);
  });

  it('refuses an answer over the cap, and a refused connection is a transport error', async () => {
    answer = (_body, _request, response) => {
      response.setHeader('content-type', 'application/json');
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 11; i++) response.write(chunk);
      response.end('{}');
    };
    const client = createPublicClient({ transport: rpcTransport(url, { retryCount: 0 }) });
    const tooBig = await client.getChainId().catch((error: unknown) => error);
    expect(String(tooBig)).toMatch(/over 10485760 bytes/);

    const nowhere = createPublicClient({ transport: rpcTransport('http://127.0.0.1:9', { retryCount: 0 }) });
    expect(isTransportError(await nowhere.getChainId().catch((error: unknown) => error))).toBe(true);
  });

  it("times out as viem's transport does, and lets go of the connection", async () => {
    let waiting: import('node:net').Socket | undefined;
    answer = (_body, request) => void (waiting = request.socket); // never answers
    const client = createPublicClient({ transport: rpcTransport(url, { retryCount: 0, timeout: 200 }) });
    const started = Date.now();
    const error = await client.getChainId().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(Date.now() - started).toBeLessThan(2_000);
    await expect.poll(() => waiting?.destroyed).toBe(true);
  });

  it('sends a call again on a fresh connection when a kept-alive one was reset as it was reused', async () => {
    // Answers the first request on each connection, then resets the connection at its next request (a server that
    // closed an idle keep-alive socket just as the client reused it).
    const sockets: net.Socket[] = [];
    const resetting = net.createServer((socket) => {
      sockets.push(socket);
      let served = 0;
      socket.on('data', (data) => {
        if (!data.toString().includes('\r\n\r\n')) return;
        if (served++ > 0) return void socket.resetAndDestroy();
        const body = JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(data.toString().split('\r\n\r\n')[1]!).id, result: '0x7a69' });
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`);
      });
    });
    await new Promise<void>((resolve) => resetting.listen(0, '127.0.0.1', resolve));
    try {
      const client = createPublicClient({ transport: rpcTransport(`http://127.0.0.1:${(resetting.address() as AddressInfo).port}`, { retryCount: 0 }) });
      expect(await client.getChainId()).toBe(31337);
      expect(await client.getChainId()).toBe(31337);
      expect(sockets).toHaveLength(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => resetting.close(resolve));
    }
  });
});
