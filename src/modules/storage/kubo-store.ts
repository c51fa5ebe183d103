// The production image store: a Kubo node's HTTP RPC (IPFS_API_URL, operator config). Kubo builds the
// DAG; we compute the CID ourselves too and refuse an answer that differs, so a node configured with
// other import settings can never hand out a CID the API then promises to serve.
import type { CheckResult } from '../../platform/readiness.js';
import { CidNotFoundError, KUBO_ADD_PARAMS, checkRange, cidOf, parseCid } from './cid.js';
import type { ImageStore } from './image-store.js';

export interface KuboImageStoreOptions {
  /** Whole add (upload and import) and whole cat (until the last byte). */
  timeoutMs?: number;
  /** The readiness probe (`/api/v0/version`). */
  checkTimeoutMs?: number;
}

const ADD_ANSWER_LIMIT = 64 * 1024; // one NDJSON line per file, well under 1 KiB; a bound, not a guess
const ERROR_BODY_LIMIT = 16 * 1024;

export class KuboImageStore implements ImageStore {
  readonly #api: string;
  readonly #timeoutMs: number;
  readonly #checkTimeoutMs: number;

  constructor(apiUrl: string, options: KuboImageStoreOptions = {}) {
    this.#api = `${apiUrl.replace(/\/+$/, '')}/api/v0/`;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#checkTimeoutMs = options.checkTimeoutMs ?? 1_500;
  }

  async put(bytes: Uint8Array): Promise<{ cid: string }> {
    const form = new FormData();
    form.append('file', new Blob([bytes]), 'image');
    const params = { ...KUBO_ADD_PARAMS, pin: 'true', progress: 'false', 'cid-base': 'base32' };
    const [answer, expected] = await Promise.all([
      this.#post('add', params, this.#timeoutMs, form).then((response) => readText(response, ADD_ANSWER_LIMIT)),
      cidOf(bytes),
    ]);
    const hash = rootHash(answer);
    if (parseCid(hash).toString() !== expected) {
      throw new Error(`Kubo answered CID ${hash} where unixfs-v1-2025 gives ${expected}: check the node's Import.* config`);
    }
    return { cid: expected };
  }

  /** Errors (unknown CID, Kubo failing) surface on the first `next()`; a cut-short stream throws at its end. */
  async *read(cid: string, range?: { offset?: number; length?: number }): AsyncIterable<Uint8Array> {
    const { offset, length } = checkRange(range);
    parseCid(cid);
    if (length === 0) return; // nothing to ask Kubo for
    const params: Record<string, string> = { arg: cid, offset: String(offset), offline: 'true' }; // never hang on a DHT lookup
    if (length !== undefined) params.length = String(length);
    let response: Response;
    try {
      response = await this.#post('cat', params, this.#timeoutMs);
    } catch (error) {
      if (error instanceof KuboError && /not found|could not find/i.test(error.kuboMessage)) throw new CidNotFoundError(cid);
      throw error;
    }
    // Kubo reports a failure mid-stream only in an HTTP trailer, which fetch cannot read: count instead.
    const announced = response.headers.get('x-content-length');
    const reader = response.body!.getReader();
    let received = 0;
    let finished = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.byteLength;
        yield value;
      }
      finished = true;
    } finally {
      if (!finished) await reader.cancel().catch(() => {}); // the reader stopped early: free the connection
    }
    if (announced !== null && received !== Number(announced)) {
      throw new Error(`Kubo cat of ${cid} ended after ${received} of ${announced} bytes`);
    }
  }

  async check(): Promise<CheckResult> {
    try {
      const answer = JSON.parse(await readText(await this.#post('version', {}, this.#checkTimeoutMs), ERROR_BODY_LIMIT));
      return { ok: true, detail: { kubo: answer.Version } };
    } catch (error) {
      return { ok: false, reason: `Kubo RPC: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300) };
    }
  }

  /** Kubo's RPC takes POST only; an answer ≥ 400 becomes a KuboError with Kubo's own message. */
  async #post(command: string, params: Record<string, string>, timeoutMs: number, body?: FormData): Promise<Response> {
    const url = `${this.#api}${command}?${new URLSearchParams(params)}`;
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', body, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new Error(`Kubo ${command}: ${fetchFailure(error)}`, { cause: error });
    }
    if (!response.ok) throw await KuboError.from(command, response);
    return response;
  }
}

export class KuboError extends Error {
  constructor(
    readonly command: string,
    readonly status: number,
    readonly kuboMessage: string,
  ) {
    super(`Kubo ${command} failed (HTTP ${status}): ${kuboMessage}`);
  }

  /** Kubo answers `{"Message","Code","Type":"error"}`, or plain text for 404/405. */
  static async from(command: string, response: Response): Promise<KuboError> {
    const text = await readText(response, ERROR_BODY_LIMIT).catch(() => '');
    let message = text.trim();
    try {
      message = String(JSON.parse(text).Message ?? message);
    } catch {
      // not JSON: keep the text
    }
    return new KuboError(command, response.status, message.slice(0, 500) || response.statusText);
  }
}

/** The add answer's root: the last NDJSON line with a Hash (one per file; a single file gives one). */
function rootHash(answer: string): string {
  let hash: string | undefined;
  for (const line of answer.split('\n')) {
    if (line.trim() === '') continue;
    const event = JSON.parse(line) as { Hash?: unknown; Type?: unknown; Message?: unknown };
    if (event.Type === 'error') throw new Error(`Kubo add failed: ${String(event.Message)}`);
    if (typeof event.Hash === 'string') hash = event.Hash;
  }
  if (hash === undefined) throw new Error(`Kubo add answered no Hash: ${JSON.stringify(answer.slice(0, 200))}`);
  return hash;
}

/** Reads a body as text, refusing to hold more than `limit` bytes. */
async function readText(response: Response, limit: number): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new Error(`Kubo answered more than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Why fetch failed, in words: its own message is "fetch failed", the cause says why (ECONNREFUSED…). */
function fetchFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError') return 'no answer in time';
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}
