import { z } from 'zod';
import { chainSettings } from '../../chain/settings.js';
import { defineSettings, hexKey, positiveInt } from '../../platform/settings.js';

/** Chain indexer and transaction API (see docs/txapi.md). */
export interface TxapiSettings {
  /** EIP-712 attestation key; null = a dev key generated into the data dir. */
  attestationPrivateKey: string | null;
  /** Finality depth: records publish once their block has this many blocks on top (0 on the devchain, 12 otherwise). */
  confirmations: number;
  /** First block to index with no checkpoint: 0 on the devchain, 'latest' on an external chain. */
  startBlock: number | 'latest';
  pollMs: number;
  batchBlocks: number;
}

export const txapiSettings = defineSettings({
  env: {
    ATTESTATION_PRIVATE_KEY: hexKey,
    INDEXER_CONFIRMATIONS: z.coerce.number().int().min(0).max(10_000).optional(),
    INDEXER_START_BLOCK: z.union([z.literal('latest'), z.coerce.number().int().min(0)]).optional(),
    INDEXER_POLL_MS: positiveInt(1000),
    INDEXER_BATCH_BLOCKS: positiveInt(2000),
  },
  reads: { CHAIN_RPC_URL: chainSettings.env.CHAIN_RPC_URL },
  load: (e): { txapi: TxapiSettings } => ({
    txapi: {
      attestationPrivateKey: e.ATTESTATION_PRIVATE_KEY ?? null,
      // The devchain automines one block per transaction and never reorgs: finality depth 0 there.
      confirmations: e.INDEXER_CONFIRMATIONS ?? (e.CHAIN_RPC_URL ? 12 : 0),
      startBlock: e.INDEXER_START_BLOCK ?? (e.CHAIN_RPC_URL ? 'latest' : 0),
      pollMs: e.INDEXER_POLL_MS,
      batchBlocks: e.INDEXER_BATCH_BLOCKS,
    },
  }),
  devKeys: (e) => (e.ATTESTATION_PRIVATE_KEY ? [] : ['ATTESTATION_PRIVATE_KEY']),
});
