// Both image stores against the same bytes: round trips, ranged reads, identical CIDs, and the ways the
// Kubo store must fail (a node answering another CID, a node down or gone).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CidNotFoundError, cidOf } from '../../src/modules/storage/cid.js';
import type { ImageStore } from '../../src/modules/storage/image-store.js';
import { KuboImageStore } from '../../src/modules/storage/kubo-store.js';
import { LocalImageStore } from '../../src/modules/storage/local-store.js';
import { startKuboStandIn, type KuboStandIn } from './kubo-stand-in.js';

const MiB = 1_048_576;
const sizes = [1, 100_000, 3 * MiB];
const files = new Map(sizes.map((size) => [size, new Uint8Array(randomBytes(size))]));
const MISSING = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku'; // the empty file: never put here

async function readAll(source: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of source) parts.push(part);
  return new Uint8Array(Buffer.concat(parts));
}

/** Byte equality without vitest's element-by-element diff (seconds on a MiB). */
function expectBytes(actual: Uint8Array, expected: Uint8Array) {
  expect(actual.length).toBe(expected.length);
  expect(Buffer.from(actual).equals(Buffer.from(expected))).toBe(true);
}

let dir: string;
let kubo: KuboStandIn;
const stores: Record<'local' | 'kubo', ImageStore> = {} as never;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'image-store-'));
  kubo = await startKuboStandIn();
  stores.local = new LocalImageStore(join(dir, 'ipfs'));
  stores.kubo = new KuboImageStore(kubo.url, { checkTimeoutMs: 300 });
});

afterAll(async () => {
  await kubo?.close();
  await rm(dir, { recursive: true, force: true });
});

afterEach(() => {
  kubo.setDown(false);
  kubo.setMisconfigured(false);
  kubo.setLatency(0);
  kubo.failNext(0);
});

describe.each(['local', 'kubo'] as const)('%s store', (name) => {
  it.each(sizes)('puts and reads back %i bytes under the CID cidOf gives', async (size) => {
    const bytes = files.get(size)!;
    const { cid } = await stores[name].put(bytes);
    expect(cid).toBe(await cidOf(bytes));
    expectBytes(await readAll(stores[name].read(cid)), bytes);
  });

  it('reads ranges, across a chunk boundary and past the end', async () => {
    const bytes = files.get(3 * MiB)!;
    const { cid } = await stores[name].put(bytes);
    const read = (offset?: number, length?: number) => readAll(stores[name].read(cid, { offset, length }));
    expectBytes(await read(MiB - 10, 20), bytes.subarray(MiB - 10, MiB + 10));
    expectBytes(await read(2 * MiB - 1, MiB + 1), bytes.subarray(2 * MiB - 1));
    expectBytes(await read(3 * MiB - 5), bytes.subarray(3 * MiB - 5));
    expectBytes(await read(5, 1), bytes.subarray(5, 6));
    expectBytes(await read(3 * MiB - 2, 100), bytes.subarray(3 * MiB - 2)); // length past the end: to the end
    expect((await read(3 * MiB)).length).toBe(0);
    expect((await read(4 * MiB, 10)).length).toBe(0);
    expect((await read(0, 0)).length).toBe(0);
    const small = await stores[name].put(files.get(100_000)!); // a single raw block
    expectBytes(await readAll(stores[name].read(small.cid, { offset: 99_990, length: 5 })), files.get(100_000)!.subarray(99_990, 99_995));
  });

  it('refuses unknown and invalid CIDs and bad ranges', async () => {
    await expect(readAll(stores[name].read(MISSING))).rejects.toBeInstanceOf(CidNotFoundError);
    await expect(readAll(stores[name].read('not-a-cid'))).rejects.toThrow(/not a valid CID/);
    await expect(readAll(stores[name].read(MISSING, { offset: -1 }))).rejects.toThrow(RangeError);
  });

  it('lets a reader stop early', async () => {
    const { cid } = await stores[name].put(files.get(3 * MiB)!);
    for await (const part of stores[name].read(cid)) {
      expect(part.length).toBeGreaterThan(0);
      break;
    }
    expectBytes(await readAll(stores[name].read(cid, { offset: 0, length: 3 })), files.get(3 * MiB)!.subarray(0, 3));
  });

  it('is ready', async () => {
    expect(await stores[name].check()).toMatchObject({ ok: true });
  });
});

describe('local store', () => {
  it('keeps its blocks across instances (a restart)', async () => {
    const bytes = files.get(3 * MiB)!;
    const { cid } = await stores.local.put(bytes);
    const reopened = new LocalImageStore(join(dir, 'ipfs'));
    expectBytes(await readAll(reopened.read(cid)), bytes);
  });

  it('is not ready when its directory cannot be written', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const store = new LocalImageStore(join(file, 'ipfs')); // under a file: fails even as root
    const result = await store.check();
    expect(result.ok).toBe(false);
    expect(result.reason).toMatch(/not writable/);
    await expect(store.put(files.get(1)!)).rejects.toThrow();
  });
});

describe('kubo store', () => {
  it('asks Kubo for the unixfs-v1-2025 import, pinned', async () => {
    await stores.kubo.put(files.get(100_000)!);
    const add = kubo.requests.filter((request) => request.command === 'add').at(-1)!;
    expect(Object.fromEntries(add.query)).toMatchObject({
      'cid-version': '1',
      'raw-leaves': 'true',
      chunker: 'size-1048576',
      'max-file-links': '1024',
      trickle: 'false',
      pin: 'true',
    });
    expect(kubo.pins.has(await cidOf(files.get(100_000)!))).toBe(true);
  });

  it('throws when Kubo answers another CID than ours', async () => {
    kubo.setMisconfigured(true); // imports with Kubo's legacy defaults: a Qm… CID
    await expect(stores.kubo.put(files.get(3 * MiB)!)).rejects.toThrow(/Kubo answered CID Qm\w+ where unixfs-v1-2025 gives bafy/);
  });

  it('throws on an injected add failure, then works again', async () => {
    kubo.failNext(1);
    await expect(stores.kubo.put(files.get(1)!)).rejects.toThrow(/Kubo add failed \(HTTP 500\): injected failure of add/);
    await expect(stores.kubo.put(files.get(1)!)).resolves.toEqual({ cid: await cidOf(files.get(1)!) });
  });

  it('when Kubo is down: put and read throw, check is not ok', async () => {
    const { cid } = await stores.kubo.put(files.get(100_000)!);
    kubo.setDown(true);
    await expect(stores.kubo.put(files.get(100_000)!)).rejects.toThrow(/HTTP 500.*stand-in is down/);
    await expect(readAll(stores.kubo.read(cid))).rejects.toThrow(/HTTP 500/);
    expect(await stores.kubo.check()).toMatchObject({ ok: false, reason: expect.stringMatching(/stand-in is down/) });
  });

  it('check is not ok when Kubo does not answer in time', async () => {
    kubo.setLatency(1_000);
    expect(await stores.kubo.check()).toMatchObject({ ok: false, reason: 'Kubo RPC: Kubo version: no answer in time' });
  });

  it('when nothing listens: put throws, check is not ok', async () => {
    const gone = await startKuboStandIn();
    await gone.close();
    const store = new KuboImageStore(gone.url);
    await expect(store.put(files.get(1)!)).rejects.toThrow(/Kubo add: fetch failed.*ECONNREFUSED/);
    expect(await store.check()).toMatchObject({ ok: false, reason: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('the stand-in speaks POST only, like Kubo', async () => {
    expect((await fetch(`${kubo.url}/api/v0/version`)).status).toBe(405);
    expect((await fetch(`${kubo.url}/api/v0/version`, { method: 'POST' })).status).toBe(200);
  });
});
