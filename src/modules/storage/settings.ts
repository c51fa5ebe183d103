import { address, defineSettings, optionalUrl, positiveInt, trimSlash } from '../../platform/settings.js';

export interface StorageConfig {
  /**
   * Paid image storage. payTo receives upload payments (default on the devchain: a dev receiver key in
   * the data dir; with CHAIN_RPC_URL it must be set, else uploads are unavailable). Blocks live in the
   * data dir unless IPFS_API_URL names a Kubo node's RPC.
   */
  storage: {
    payTo: string | null;
    ipfsApiUrl: string | null;
    sweepIntervalMs: number;
    /** A pending payment younger than this belongs to a live request; the worker leaves it alone. */
    reconcileAfterSeconds: number;
  };
}

export const storageSettings = defineSettings({
  env: {
    STORAGE_PAY_TO: address,
    IPFS_API_URL: optionalUrl,
    STORAGE_SWEEP_INTERVAL_MS: positiveInt(15_000),
    STORAGE_RECONCILE_AFTER_SECONDS: positiveInt(60),
  },
  load: (e): StorageConfig => ({
    storage: {
      payTo: e.STORAGE_PAY_TO ?? null,
      ipfsApiUrl: trimSlash(e.IPFS_API_URL) ?? null,
      sweepIntervalMs: e.STORAGE_SWEEP_INTERVAL_MS,
      reconcileAfterSeconds: e.STORAGE_RECONCILE_AFTER_SECONDS,
    },
  }),
});
