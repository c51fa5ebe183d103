// A local stand-in for a Kubo node's RPC, speaking its wire protocol for the three commands the image
// store uses: POST /api/v0/add (multipart, NDJSON answer), /api/v0/cat (offset/length, streamed),
// /api/v0/version. It imports with the options the query asks for, defaulting like Kubo does, so a
// client that forgets a flag gets the CID a real node would give it. Failures are injectable.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { importer, type ImporterOptions } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { exporter } from 'ipfs-unixfs-exporter';
import { CID } from 'multiformats/cid';

type Command = 'add' | 'cat' | 'version';

export interface KuboStandIn {
  url: string;
  blockstore: MemoryBlockstore;
  /** Roots added with pin=true. */
  pins: Set<string>;
  /** Every request: command and query, in order. */
  requests: Array<{ command: string; query: URLSearchParams }>;
  /** Every command answers 500 with Kubo's error JSON while down. */
  setDown(down: boolean): void;
  /** The next `count` calls of `command` (default: add) answer 500. */
  failNext(count: number, command?: Command | 'any'): void;
  /** Ignores the add flags and imports with Kubo's legacy defaults (CIDv0, 256 KiB, dag-pb leaves). */
  setMisconfigured(misconfigured: boolean): void;
  /** Waits this long before answering anything (to exercise timeouts). */
  setLatency(ms: number): void;
  close(): Promise<void>;
}

const MAX_UPLOAD = 64 * 1024 * 1024;

export async function startKuboStandIn(): Promise<KuboStandIn> {
  const blockstore = new MemoryBlockstore();
  const pins = new Set<string>();
  const requests: KuboStandIn['requests'] = [];
  let down = false;
  let misconfigured = false;
  let latencyMs = 0;
  const failures = { command: 'add' as Command | 'any', count: 0 };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // Answers that do not read the upload still drain it, so the client sees the answer, not a reset.
    const drain = () => req.resume();
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const command = url.pathname.replace(/^\/api\/v0\//, '');
    if (!url.pathname.startsWith('/api/v0/') || !['add', 'cat', 'version'].includes(command)) {
      drain();
      return sendText(res, 404, '404 page not found');
    }
    if (req.method !== 'POST') {
      drain();
      return sendText(res, 405, '405 - Method Not Allowed'); // Kubo refuses GET since 0.5
    }
    requests.push({ command, query: url.searchParams });
    if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
    if (down) {
      drain();
      return sendError(res, 500, 'stand-in is down');
    }
    if (failures.count > 0 && (failures.command === 'any' || failures.command === command)) {
      failures.count--;
      drain();
      return sendError(res, 500, `injected failure of ${command}`);
    }
    if (command === 'version') {
      drain();
      return sendJson(res, { Version: '0.40.0-stand-in', Commit: '', Repo: '18', System: 'amd64/linux', Golang: 'go1.25' });
    }
    if (command === 'add') return add(req, res, url.searchParams);
    drain();
    return cat(res, url.searchParams);
  };

  const add = async (req: IncomingMessage, res: ServerResponse, query: URLSearchParams) => {
    const file = await readSinglePart(req);
    if (typeof file === 'string') return sendError(res, 400, file, 1);
    const options = misconfigured ? importOptions(new URLSearchParams()) : importOptions(query);
    if (typeof options === 'string') return sendError(res, 400, options, 1);
    let root: { cid: CID; size: bigint } | undefined;
    for await (const entry of importer([{ content: file.content }], blockstore, options)) root = entry;
    if (!root) return sendError(res, 500, 'nothing imported');
    if (query.get('pin') !== 'false') pins.add(root.cid.toString()); // Kubo pins unless pin=false
    res.writeHead(200, { 'Content-Type': 'application/json', 'X-Chunked-Output': '1', Trailer: 'X-Stream-Error' });
    res.end(`${JSON.stringify({ Name: file.name, Hash: root.cid.toString(), Size: String(root.size) })}\n`);
  };

  const cat = async (res: ServerResponse, query: URLSearchParams) => {
    const arg = query.get('arg') ?? '';
    let cid: CID;
    try {
      cid = CID.parse(arg.replace(/^\/ipfs\//, ''));
    } catch {
      return sendError(res, 500, `invalid path "${arg}": invalid cid`);
    }
    // A missing block: what Kubo says offline (online it would search the network first).
    if (!(await blockstore.has(cid))) return sendError(res, 500, `block was not found locally (offline): ipld: could not find ${cid}`);
    const entry = await exporter(cid, blockstore);
    if (entry.type !== 'file' && entry.type !== 'raw') return sendError(res, 500, 'this dag node is a directory');
    const size = Number(entry.size);
    const offset = Number(query.get('offset') ?? 0);
    const length = query.has('length') ? Number(query.get('length')) : -1;
    if (offset < 0) return sendError(res, 500, 'cannot specify negative offset');
    if (length < -1) return sendError(res, 500, 'cannot specify negative length');
    // Kubo's cat: past the end is empty, length 0 is empty, no length means to the end.
    const start = Math.min(offset, size);
    const end = length >= 0 ? Math.min(size, start + length) : size;
    res.writeHead(200, {
      'Content-Type': 'text/plain',
      'X-Stream-Output': '1',
      'X-Content-Length': String(end - start),
      Trailer: 'X-Stream-Error',
    });
    if (end > start) {
      for await (const chunk of entry.content({ offset: start, length: end - start })) {
        if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
      }
    }
    res.end();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, 500, error instanceof Error ? error.message : String(error));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    blockstore,
    pins,
    requests,
    setDown: (value) => void (down = value),
    failNext: (count, command = 'add') => Object.assign(failures, { count, command }),
    setMisconfigured: (value) => void (misconfigured = value),
    setLatency: (ms) => void (latencyMs = ms),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Kubo's add flags as importer options; absent flags take Kubo's built-in defaults (unixfs-v0-2015). */
function importOptions(query: URLSearchParams): ImporterOptions | string {
  const cidVersion = Number(query.get('cid-version') ?? 0);
  if (cidVersion !== 0 && cidVersion !== 1) return `unknown CID version ${cidVersion}`;
  const rawLeaves = query.has('raw-leaves') ? query.get('raw-leaves') === 'true' : cidVersion === 1;
  const chunker = query.get('chunker') ?? 'size-262144';
  const chunkSize = /^size-(\d+)$/.exec(chunker)?.[1];
  if (!chunkSize) return `stand-in supports only size-N chunkers, got ${chunker}`;
  if (query.get('trickle') === 'true') return 'stand-in does not build trickle DAGs';
  if ((query.get('hash') ?? 'sha2-256') !== 'sha2-256') return 'stand-in hashes with sha2-256 only';
  if (query.get('inline') === 'true') return 'stand-in does not inline';
  return {
    cidVersion,
    rawLeaves,
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: Number(chunkSize) }),
    layout: balanced({ maxChildrenPerNode: Number(query.get('max-file-links') ?? 174) }),
  };
}

/** The one file part of a multipart/form-data body (Kubo's add of a single file). */
async function readSinglePart(req: IncomingMessage): Promise<{ name: string; content: Uint8Array } | string> {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '');
  if (!boundary) return "file argument 'path' is required";
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_UPLOAD) return 'upload too large for the stand-in';
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  const delimiter = `--${boundary[1] ?? boundary[2]}`;
  const start = body.indexOf(`${delimiter}\r\n`);
  const headersEnd = body.indexOf('\r\n\r\n', start);
  const end = body.indexOf(`\r\n${delimiter}`, headersEnd);
  if (start < 0 || headersEnd < 0 || end < 0) return "file argument 'path' is required";
  const headers = body.subarray(start + delimiter.length + 2, headersEnd).toString('utf8');
  const name = /filename="([^"]*)"/i.exec(headers)?.[1] ?? '';
  return { name: decodeURIComponent(name), content: new Uint8Array(body.subarray(headersEnd + 4, end)) };
}

function sendError(res: ServerResponse, status: number, message: string, code = 0) {
  sendJson(res, { Message: message, Code: code, Type: 'error' }, status);
}

function sendJson(res: ServerResponse, value: unknown, status = 200) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(`${JSON.stringify(value)}\n`);
}

function sendText(res: ServerResponse, status: number, text: string) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(text);
}
