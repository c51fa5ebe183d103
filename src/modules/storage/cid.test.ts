// Known answers: CIDs a real Kubo with the `unixfs-v1-2025` profile gives. The inputs are Kubo's own
// test data: ChaCha20 keystream, key sha256(seed), zero nonce (kubo test/cli/testutils/random_deterministic.go).
import { createCipheriv, createHash } from 'node:crypto';
import * as dagPb from '@ipld/dag-pb';
import { MemoryBlockstore } from 'blockstore-core/memory';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { create as digestOf } from 'multiformats/hashes/digest';
import { describe, expect, it } from 'vitest';
import { CHUNK_SIZE, MAX_LINKS, cidOf, importFile, importRoot } from './cid.js';

const MiB = 1_048_576;

/** Kubo's DeterministicRandomReaderBytes(size, seed), streamed in 1 MiB pieces. */
async function* kuboBytes(size: number, seed: string): AsyncGenerator<Uint8Array> {
  const key = createHash('sha256').update(seed).digest();
  // OpenSSL's chacha20 IV is a 4-byte block counter then the 12-byte nonce: all zero, as in Go's.
  const cipher = createCipheriv('chacha20', key, Buffer.alloc(16));
  for (let left = size; left > 0; left -= MiB) yield new Uint8Array(cipher.update(Buffer.alloc(Math.min(MiB, left))));
}

async function kuboBuffer(size: number, seed: string): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const part of kuboBytes(size, seed)) parts.push(part);
  return new Uint8Array(Buffer.concat(parts));
}

const discard = { put: async (cid: CID) => cid };

// kubo test/cli/cid_profiles_test.go, `unixfsV12025` (https://github.com/ipfs/kubo/blob/master/test/cli/cid_profiles_test.go)
// and IPIP-0499 "Test fixtures" (https://specs.ipfs.tech/ipips/ipip-0499/, ipfs/specs src/ipips/ipip-0499.md).
describe('cidOf: Kubo unixfs-v1-2025 known answers', () => {
  it('"hello world" is one raw block (SmallFileCID; IPIP-0499 small file)', async () => {
    expect(await cidOf(new TextEncoder().encode('hello world'))).toBe(
      'bafkreifzjut3te2nhyekklss27nh3k72ysco7y32koao5eei66wof36n5e',
    );
  });

  it('exactly one chunk (1 MiB) is still one raw block (FileAtChunkSizeCID, seed "chunk-v1-seed")', async () => {
    expect(await cidOf(await kuboBuffer(CHUNK_SIZE, 'chunk-v1-seed'))).toBe(
      'bafkreiacndfy443ter6qr2tmbbdhadvxxheowwf75s6zehscklu6ezxmta',
    );
  });

  it('one byte more is a dag-pb root over two raw leaves (FileOverChunkSizeCID)', async () => {
    const blocks = new MemoryBlockstore();
    const cid = await importFile(await kuboBuffer(CHUNK_SIZE + 1, 'chunk-v1-seed'), blocks);
    expect(cid).toBe('bafybeigmix7t42i6jacydtquhet7srwvgpizfg7gjbq7627d35mjomtu64');
    const root = await rootNode(blocks, cid);
    expect(root.Links.map((link) => [link.Hash.code, link.Tsize])).toEqual([
      [raw.code, CHUNK_SIZE],
      [raw.code, 1],
    ]);
  });

  // 1 GiB streamed through the importer: about a second each on a quiet machine. No database is involved, so the
  // PGlite pass runs them and CI's PostgreSQL pass does not hash the same 3 GiB again.
  const gibibyte = it.skipIf(process.env.DATABASE_URL);

  gibibyte('1024 chunks fit under one root (FileAtMaxLinksCID, seed "v1-2025-seed"; IPIP-0499 file at max links)', async () => {
    const blocks = new RootsOnly();
    const cid = await importRoot(kuboBytes(MAX_LINKS * CHUNK_SIZE, 'v1-2025-seed'), blocks);
    expect(cid.toString()).toBe('bafybeihmf37wcuvtx4hpu7he5zl5qaf2ineo2lqlfrapokkm5zzw7zyhvm');
    expect(blocks.node(cid).Links).toHaveLength(MAX_LINKS);
  });

  gibibyte('1025 chunks make a two-level balanced DAG (FileOverMaxLinksCID: 1 GiB + 1 byte)', async () => {
    const blocks = new RootsOnly();
    const cid = await importRoot(kuboBytes(MAX_LINKS * CHUNK_SIZE + 1, 'v1-2025-seed'), blocks);
    expect(cid.toString()).toBe('bafybeibdsi225ugbkmpbdohnxioyab6jsqrmkts3twhpvfnzp77xtzpyhe');
    const [full, rest] = blocks.node(cid).Links;
    expect(blocks.node(full.Hash).Links).toHaveLength(MAX_LINKS);
    expect(blocks.node(rest.Hash).Links.map((link) => link.Tsize)).toEqual([1]); // same depth as the others
  });

  gibibyte('IPIP-0499 balanced v1 fixture: 1025 MiB, 1025 × 1 MiB chunks, depth 2', async () => {
    const cid = await importRoot(kuboBytes(1025 * MiB, 'v1-2025-seed'), discard);
    expect(cid.toString()).toBe('bafybeihmzokxxjqwxjcryerhp5ezpcog2wcawfryb2xm64xiakgm4a5jue');
  });
});

describe('cidOf: first principles', () => {
  // Independent of the importer: a file of at most one chunk is CIDv1(raw, sha2-256(bytes)).
  const rawCid = (bytes: Uint8Array) =>
    CID.createV1(raw.code, digestOf(0x12, createHash('sha256').update(bytes).digest())).toString();

  it.each([0, 1, 100_000, CHUNK_SIZE])('%i bytes: raw CID of the sha-256', async (size) => {
    const bytes = await kuboBuffer(size, `size-${size}`);
    const cid = await cidOf(bytes);
    expect(cid).toBe(rawCid(bytes));
    expect(cid).toMatch(/^bafk/);
  });

  it('matches importFile, and importFile keeps every block', async () => {
    const bytes = await kuboBuffer(3 * MiB + 7, 'three');
    const blocks = new MemoryBlockstore();
    const cid = await importFile(bytes, blocks);
    expect(cid).toBe(await cidOf(bytes));
    expect(cid).toMatch(/^bafy/);
    const root = await rootNode(blocks, cid);
    expect(root.Links.map((link) => link.Tsize)).toEqual([MiB, MiB, MiB, 7]);
    for (const link of root.Links) expect(await blocks.has(link.Hash)).toBe(true);
  });
});

async function rootNode(blocks: MemoryBlockstore, cid: string): Promise<dagPb.PBNode> {
  const parts: Uint8Array[] = [];
  for await (const part of blocks.get(CID.parse(cid))) parts.push(part);
  return dagPb.decode(Buffer.concat(parts));
}

/** Keeps dag-pb nodes only (the 1 GiB of raw leaves would not fit the test's memory budget). */
class RootsOnly {
  readonly #nodes = new Map<string, Uint8Array>();
  async put(cid: CID, bytes: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<CID> {
    if (cid.code === dagPb.code && bytes instanceof Uint8Array) this.#nodes.set(cid.toString(), bytes);
    return cid;
  }
  node(cid: CID): dagPb.PBNode {
    const bytes = this.#nodes.get(cid.toString());
    if (!bytes) throw new Error(`no dag-pb node ${cid}`);
    return dagPb.decode(bytes);
  }
}
