// Where fulfilled images' blocks live. The embedded default is a blockstore in the data dir; production
// points IPFS_API_URL at a Kubo node. Both compute the same CID for the same bytes (Kubo's
// `unixfs-v1-2025` profile), so an order's CID does not depend on which store holds it.
import type { CheckResult } from '../../platform/readiness.js';

export interface ImageStore {
  /** Stores the bytes as a UnixFS file and answers its CID (CIDv1, base32). Throws when the store fails. */
  put(bytes: Uint8Array): Promise<{ cid: string }>;
  /** The file's bytes from `offset` (default 0), at most `length` of them (default: to the end). */
  read(cid: string, range?: { offset?: number; length?: number }): AsyncIterable<Uint8Array>;
  /** Whether the store can take and serve blocks now (for /ready and the config's `available`). */
  check(): Promise<CheckResult>;
  close?(): Promise<void>;
}
