// The embedded image store: UnixFS blocks as files in a directory (blockstore-fs), built with the same
// importer options as Kubo's `unixfs-v1-2025`, so the CIDs are the ones a Kubo node would give.
import { randomUUID } from 'node:crypto';
import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FsBlockstore } from 'blockstore-fs';
import { exporter } from 'ipfs-unixfs-exporter';
import type { CheckResult } from '../../platform/readiness.js';
import { CHUNK_SIZE, CidNotFoundError, checkRange, cidOf, importFile, parseCid } from './cid.js';
import type { ImageStore } from './image-store.js';

export class LocalImageStore implements ImageStore {
  readonly #blocks: FsBlockstore;
  #opening: Promise<void> | undefined;

  constructor(readonly directory: string) {
    this.#blocks = new FsBlockstore(directory);
  }

  /** Creates the directory if missing. Called by every operation; a failed open is retried next time. */
  async open(): Promise<void> {
    this.#opening ??= this.#blocks.open().catch((error: unknown) => {
      this.#opening = undefined;
      throw error;
    });
    await this.#opening;
  }

  async put(bytes: Uint8Array): Promise<{ cid: string }> {
    await this.open();
    if (bytes.length <= CHUNK_SIZE) {
      // One chunk is one raw block under its own CID (what the importer would write), without its pipeline.
      const cid = await cidOf(bytes);
      await this.#blocks.put(parseCid(cid), bytes);
      return { cid };
    }
    return { cid: await importFile(bytes, this.#blocks) };
  }

  /** Errors (unknown or invalid CID, bad range) surface on the first `next()`, before any byte. */
  async *read(cid: string, range?: { offset?: number; length?: number }): AsyncIterable<Uint8Array> {
    const { offset, length } = checkRange(range);
    const root = parseCid(cid);
    await this.open();
    // Without this the exporter's error would be blockstore-fs's "ENOENT: …/<base32 multihash>.data".
    if (!(await this.#blocks.has(root))) throw new CidNotFoundError(cid);
    const entry = await exporter(root, this.#blocks);
    if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`${cid} is a ${entry.type}, not a file`);
    if (BigInt(offset) >= entry.size || length === 0) return; // the exporter throws past the end; Kubo answers nothing
    yield* entry.content({ offset, length });
  }

  /** Writable directory: writes and removes a probe file (stat-like checks pass on read-only mounts). */
  async check(): Promise<CheckResult> {
    const probe = join(this.directory, `.probe-${randomUUID()}`);
    try {
      await this.open();
      await writeFile(probe, 'ok');
      await unlink(probe);
      return { ok: true, detail: { directory: this.directory } };
    } catch (error) {
      const reason = `image store directory ${this.directory} is not writable: ${error instanceof Error ? error.message : String(error)}`;
      return { ok: false, reason: reason.slice(0, 300), detail: { directory: this.directory } };
    }
  }

  async close(): Promise<void> {
    await this.#blocks.close();
  }
}
