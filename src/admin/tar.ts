// A minimal POSIX ustar writer and streaming reader: regular files and directories, what `tollgate backup` writes
// and `tollgate restore` reads (gzipped). Any tar reads a backup (`tar tzf backup.tgz`); no dependency needed.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';

const BLOCK = 512;

function header(name: string, size: number, type: '0' | '5', mode: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    // ustar: the name split at a slash into a prefix (155) and a name (100).
    const at = name.lastIndexOf('/', 155);
    if (at <= 0 || Buffer.byteLength(name.slice(at + 1)) > 100) throw new Error(`path too long for a tar entry: ${name}`);
    prefix = name.slice(0, at);
    base = name.slice(at + 1);
  }
  const octal = (value: number, width: number) => value.toString(8).padStart(width - 1, '0') + '\0';
  block.write(base, 0, 100);
  block.write(octal(mode, 8), 100);
  block.write(octal(0, 8), 108);
  block.write(octal(0, 8), 116);
  block.write(octal(size, 12), 124);
  block.write(octal(Math.floor(Date.now() / 1000), 12), 136);
  block.write('        ', 148);
  block.write(type, 156);
  block.write('ustar\0', 257);
  block.write('00', 263);
  block.write(prefix, 345, 155);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + ' ', 148);
  return block;
}

/** Writes a .tar.gz: add files and directories in order, then end(). */
export class TarWriter {
  readonly #gzip = createGzip();
  readonly #done: Promise<void>;

  constructor(file: string) {
    this.#done = pipeline(this.#gzip, createWriteStream(file, { mode: 0o600 }));
  }

  #write(chunk: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#gzip.write(chunk, (error) => (error ? reject(error) : resolve()));
    });
  }

  async add(name: string, content: Buffer, mode = 0o600): Promise<void> {
    await this.#write(header(name, content.length, '0', mode));
    await this.#write(content);
    const pad = (BLOCK - (content.length % BLOCK)) % BLOCK;
    if (pad) await this.#write(Buffer.alloc(pad));
  }

  /** A file copied from disk in pieces (an image store may hold more than fits in memory at once). */
  async addFile(name: string, source: string, mode = 0o600): Promise<void> {
    const handle = await open(source, 'r');
    try {
      const { size } = await handle.stat();
      await this.#write(header(name, size, '0', mode));
      const buffer = Buffer.alloc(1 << 20);
      let copied = 0;
      while (copied < size) {
        const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - copied), copied);
        if (bytesRead === 0) throw new Error(`${source} shrank while it was copied`);
        await this.#write(Buffer.from(buffer.subarray(0, bytesRead)));
        copied += bytesRead;
      }
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad) await this.#write(Buffer.alloc(pad));
    } finally {
      await handle.close();
    }
  }

  async addDirectory(name: string): Promise<void> {
    await this.#write(header(name.endsWith('/') ? name : `${name}/`, 0, '5', 0o700));
  }

  async end(): Promise<void> {
    await this.#write(Buffer.alloc(BLOCK * 2));
    this.#gzip.end();
    await this.#done;
  }
}

export interface TarEntry {
  name: string;
  type: 'file' | 'directory';
  mode: number;
  size: number;
}

/**
 * Reads a .tar.gz entry by entry: `onEntry` says where a file's bytes go (a path to write, `null` to keep them in
 * memory for the returned map, `false` to skip). Entries whose name leaves the target (`..`, absolute) are refused.
 */
export async function readTar(file: string, onEntry: (entry: TarEntry) => string | null | false): Promise<Map<string, Buffer>> {
  const kept = new Map<string, Buffer>();
  let pending: Buffer = Buffer.alloc(0);
  let current: { entry: TarEntry; left: number; pad: number; sink: Buffer[] | import('node:fs/promises').FileHandle | null } | null = null;
  let ended = false;

  const consume = async () => {
    for (;;) {
      if (current) {
        if (current.left > 0) {
          if (pending.length === 0) return;
          const piece = pending.subarray(0, Math.min(current.left, pending.length));
          pending = pending.subarray(piece.length);
          current.left -= piece.length;
          if (Array.isArray(current.sink)) current.sink.push(Buffer.from(piece));
          else if (current.sink) await current.sink.write(piece);
          if (current.left > 0) return;
        }
        if (pending.length < current.pad) return;
        pending = pending.subarray(current.pad);
        if (Array.isArray(current.sink)) kept.set(current.entry.name, Buffer.concat(current.sink));
        else if (current.sink) await current.sink.close();
        current = null;
      }
      if (pending.length < BLOCK) return;
      const block = pending.subarray(0, BLOCK);
      pending = pending.subarray(BLOCK);
      if (block.every((byte) => byte === 0)) {
        ended = true;
        return;
      }
      const text = (start: number, length: number) => block.subarray(start, start + length).toString('utf8').replace(/\0.*$/s, '');
      const prefix = text(345, 155);
      const name = (prefix ? `${prefix}/` : '') + text(0, 100);
      const size = parseInt(text(124, 12).trim() || '0', 8);
      const mode = parseInt(text(100, 8).trim() || '600', 8);
      const flag = text(156, 1);
      if (path.isAbsolute(name) || name.split('/').includes('..')) throw new Error(`unsafe path in the archive: ${name}`);
      const entry: TarEntry = { name: name.replace(/\/$/, ''), type: flag === '5' ? 'directory' : 'file', mode, size };
      const target = onEntry(entry);
      let sink: Buffer[] | import('node:fs/promises').FileHandle | null = null;
      if (entry.type === 'directory') {
        if (typeof target === 'string') await mkdir(target, { recursive: true, mode: 0o700 });
      } else if (target === null) {
        sink = [];
      } else if (typeof target === 'string') {
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        sink = await open(target, 'wx', mode & 0o777);
      }
      current = { entry, left: entry.type === 'file' ? size : 0, pad: entry.type === 'file' ? (BLOCK - (size % BLOCK)) % BLOCK : 0, sink };
    }
  };

  await pipeline(
    createReadStream(file),
    createGunzip(),
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        if (ended) return done();
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        consume().then(() => done(), done);
      },
    }),
  );
  if (!ended && current) throw new Error('the archive ends in the middle of an entry: it is truncated');
  return kept;
}
