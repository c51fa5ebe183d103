// How image bytes become a CID: Kubo's `unixfs-v1-2025` profile (IPIP-0499), so the CID we promise
// is the one any Kubo with that profile (or `ipfs add` with the flags in KUBO_ADD_PARAMS) computes.
// Profile source: kubo config/profile.go "unixfs-v1-2025"; https://specs.ipfs.tech/ipips/ipip-0499/
import { importer, type ImporterOptions, type WritableStorage } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import { createHash } from 'node:crypto';
import { CID } from 'multiformats/cid';
import * as digest from 'multiformats/hashes/digest';

export const CHUNK_SIZE = 1_048_576; // Import.UnixFSChunker = size-1048576
export const MAX_LINKS = 1_024; // Import.UnixFSFileMaxLinks
const RAW_CODEC = 0x55;
const SHA2_256 = 0x12;

/** A fresh options object each call: the importer writes defaults into the object it is given. */
export function profileOptions(): ImporterOptions {
  return {
    cidVersion: 1,
    rawLeaves: true, // leaves are raw blocks, so a file of one chunk is itself a raw block (bafk…)
    reduceSingleLeafToSelf: true, // …not a dag-pb node with one link
    leafType: 'file', // ignored with raw leaves; stated so a change of default cannot matter
    chunker: fixedSize({ chunkSize: CHUNK_SIZE }),
    layout: balanced({ maxChildrenPerNode: MAX_LINKS }),
    fieldOrder: 'links-first', // dag-pb canonical order, as Kubo writes it
    wrapWithDirectory: false,
    // Directory settings of the profile: unused for single files, set so the options are the whole profile.
    shardSplitThresholdBytes: 262_144,
    shardSplitStrategy: 'block-bytes',
    shardFanoutBits: 8,
  };
}

/**
 * Query parameters for Kubo's `POST /api/v0/add` that give the same DAG whatever the node's own
 * Import.* config says (each flag overrides its config key; see kubo core/commands/add.go).
 */
export const KUBO_ADD_PARAMS: Readonly<Record<string, string>> = {
  'cid-version': '1',
  'raw-leaves': 'true',
  chunker: `size-${CHUNK_SIZE}`,
  'max-file-links': String(MAX_LINKS),
  trickle: 'false',
  hash: 'sha2-256',
  inline: 'false', // identity CIDs for tiny inputs would differ from ours
  'wrap-with-directory': 'false',
  'preserve-mode': 'false',
  'preserve-mtime': 'false',
};

/** Imports one file and answers its root CID. */
export async function importRoot(content: Uint8Array | AsyncIterable<Uint8Array>, blockstore: WritableStorage): Promise<CID> {
  let root: CID | undefined;
  for await (const entry of importer([{ content }], blockstore, profileOptions())) root = entry.cid;
  if (root === undefined) throw new Error('importer produced no entry');
  return root;
}

/** Stores the file's blocks in `blockstore` and answers its CID (base32). */
export async function importFile(bytes: Uint8Array, blockstore: WritableStorage): Promise<string> {
  return (await importRoot(bytes, blockstore)).toString();
}

// Hashes but keeps nothing: cidOf only needs the root.
const discard: WritableStorage = { put: async (cid) => cid };

/**
 * The CID `importFile` would answer, without storing any block. A file of at most one chunk is its own
 * raw leaf, CIDv1(raw, sha2-256(bytes)): hashed with node:crypto directly, since the importer's pipeline
 * costs a fixed ~75 µs per file — as much as hashing 100 KB (the known-answer tests pin both paths).
 */
export async function cidOf(bytes: Uint8Array): Promise<string> {
  if (bytes.length <= CHUNK_SIZE) return CID.createV1(RAW_CODEC, digest.create(SHA2_256, createHash('sha256').update(bytes).digest())).toString();
  return importFile(bytes, discard);
}

/** A read asked for a CID the store does not hold. */
export class CidNotFoundError extends Error {
  readonly code = 'CID_NOT_FOUND';
  constructor(readonly cid: string) {
    super(`no such CID in the image store: ${cid}`);
  }
}

/** Parses a CID string, with an error that names it (CID.parse's own says little). */
export function parseCid(cid: string): CID {
  try {
    return CID.parse(cid);
  } catch {
    throw new Error(`not a valid CID: ${JSON.stringify(cid.slice(0, 100))}`);
  }
}

/** Checks a read range; both stores then answer no bytes for an offset at or past the end, like Kubo's cat. */
export function checkRange(range: { offset?: number; length?: number } = {}): { offset: number; length?: number } {
  const { offset = 0, length } = range;
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`offset must be a whole number ≥ 0, got ${offset}`);
  if (length !== undefined && (!Number.isSafeInteger(length) || length < 0)) {
    throw new RangeError(`length must be a whole number ≥ 0, got ${length}`);
  }
  return { offset, length };
}
