// The JSON-RPC transport's HTTP: viem's `http` transport with node:http(s) and keep-alive sockets under it instead
// of the global fetch. A settle asks the node several times per batch, and undici's fetch (Request and Response
// objects, web streams for a few hundred bytes each way) cost about half a millisecond more CPU per request than
// a plain node:http request here (bench/RESULTS.md). The answer is read whole, up to viem's default cap; redirects are
// not followed (a JSON-RPC endpoint answers where it is asked) and no compression is asked for.
import http from 'node:http';
import https from 'node:https';
import { http as httpTransport, type HttpTransportConfig } from 'viem';

const MAX_ANSWER_BYTES = 10 * 1024 * 1024;
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/** viem's http transport to `url`, over rpcFetch. */
export function rpcTransport(url: string, config: Omit<HttpTransportConfig, 'fetchFn' | 'maxResponseBodySize'> = {}) {
  // maxResponseBodySize false: viem reads the answer with text(); the cap is enforced here, while reading.
  return httpTransport(url, { ...config, fetchFn: rpcFetch, maxResponseBodySize: false });
}

/** The part of fetch viem's http transport uses: POST a body, read status, Content-Type and the whole text. */
export function rpcFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(input instanceof Request ? input.url : input);
  const body = typeof init.body === 'string' ? init.body : '';
  const signal = init.signal ?? undefined;
  return new Promise<Response>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const client = url.protocol === 'https:' ? https : http;
    const request = client.request(url, {
      method: init.method ?? 'POST',
      agent: url.protocol === 'https:' ? agents.https : agents.http,
      headers: { ...(init.headers as Record<string, string>), 'content-length': Buffer.byteLength(body) },
    });
    const abort = () => request.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', abort, { once: true });
    const done = () => signal?.removeEventListener('abort', abort);
    request.on('error', (error) => {
      done();
      reject(error);
    });
    request.on('response', (response) => {
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
        resolve(new RpcAnswer(response.statusCode ?? 0, response.statusMessage ?? '', response.headers, Buffer.concat(chunks, size).toString('utf8')) as unknown as Response);
      });
    });
    request.end(body);
  });
}

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
    this.headers = { get: (name) => [headers[name.toLowerCase()]].flat()[0] ?? null };
  }

  text(): Promise<string> {
    return Promise.resolve(this.text_);
  }
}
