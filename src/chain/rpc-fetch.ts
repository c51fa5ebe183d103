// The JSON-RPC transport's HTTP: viem's `http` transport with node:http(s) and keep-alive sockets under it instead
// of the global fetch. viem still builds a Request per call, but undici's fetch itself (its Response, web streams
// for a few hundred bytes each way) cost about half a millisecond more CPU per request than a plain node:http
// request here (bench/RESULTS.md). The answer is read whole, up to viem's default cap; redirects are not followed
// (a JSON-RPC endpoint answers where it is asked) and no compression is asked for.
import http from 'node:http';
import https from 'node:https';
import { http as httpTransport, type HttpTransportConfig } from 'viem';

// viem's default maxResponseBodySize.
const MAX_ANSWER_BYTES = 10 * 1024 * 1024;
// Idle sockets are closed after this (or the server's shorter Keep-Alive hint), as undici does: a socket the
// server closed while idle would otherwise fail the next request on it.
const IDLE_SOCKET_MS = 4_000;
const agents = {
  http: new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
  https: new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
};
const HEADERS = { 'user-agent': 'tollgate', accept: 'application/json' };

/** viem's http transport to `url`, over rpcFetch (which hands viem only what it reads of a Response). */
export function rpcTransport(url: string, config: Omit<HttpTransportConfig, 'fetchFn' | 'maxResponseBodySize' | 'onFetchRequest' | 'onFetchResponse'> = {}) {
  // maxResponseBodySize false: viem reads the answer with text(); the cap is enforced here, while reading.
  return httpTransport(url, { ...config, fetchFn: rpcFetch, maxResponseBodySize: false });
}

/** The part of fetch viem's http transport uses: POST a string body, read status, Content-Type and the whole text. */
export function rpcFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  if (init.body != null && typeof init.body !== 'string') return Promise.reject(new TypeError('rpcFetch sends string bodies only'));
  const headers = init.headers === undefined || isPlainHeaders(init.headers) ? init.headers : Object.fromEntries(new Headers(init.headers));
  return post(new URL(input instanceof Request ? input.url : input), init.method ?? 'POST', { ...HEADERS, ...headers }, init.body ?? '', init.signal ?? undefined, true);
}

function post(url: URL, method: string, headers: Record<string, string>, body: string, signal: AbortSignal | undefined, mayRetry: boolean): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const secure = url.protocol === 'https:';
    const request = (secure ? https : http).request(url, {
      method,
      agent: secure ? agents.https : agents.http,
      headers: { ...headers, 'content-length': Buffer.byteLength(body) },
    });
    const abort = () => request.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', abort, { once: true });
    const done = () => signal?.removeEventListener('abort', abort);
    let answered = false;
    request.on('error', (error: NodeJS.ErrnoException) => {
      done();
      // A kept-alive socket the server closed just as we reused it: nothing reached the server, so once more on a
      // fresh one (a resent eth_sendRawTransaction carries the same bytes: "already known" at worst).
      if (mayRetry && !answered && request.reusedSocket && error.code === 'ECONNRESET') resolve(post(url, method, headers, body, signal, false));
      else reject(error);
    });
    request.on('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) request.destroy(new Error(`the RPC answer is over ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(chunk);
      });
      response.on('error', (error) => {
        done();
        reject(error);
      });
      response.on('end', () => {
        done();
        if (size > MAX_ANSWER_BYTES) return;
        resolve(new RpcAnswer(response.statusCode ?? 0, response.statusMessage ?? '', response.headers, Buffer.concat(chunks).toString('utf8')) as unknown as Response);
      });
    });
    request.end(body);
  });
}

const isPlainHeaders = (headers: NonNullable<RequestInit['headers']>): headers is Record<string, string> => !(headers instanceof Headers) && !Array.isArray(headers);

/** What viem reads of a Response (ok, status, statusText, headers.get, text) without a body stream to build and drain. */
class RpcAnswer {
  readonly ok: boolean;
  readonly body = null;
  readonly headers: { get(name: string): string | null };

  constructor(
    readonly status: number,
    readonly statusText: string,
    headers: http.IncomingHttpHeaders,
    private readonly text_: string,
  ) {
    this.ok = status >= 200 && status < 300;
    // Repeated headers joined as fetch joins them.
    this.headers = { get: (name) => [headers[name.toLowerCase()] ?? []].flat().join(', ') || null };
  }

  text(): Promise<string> {
    return Promise.resolve(this.text_);
  }
}
