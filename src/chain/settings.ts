import { defineSettings, optionalUrl } from '../platform/settings.js';

export interface ChainConfig {
  /** The production chain's JSON-RPC; null: the embedded devchain (see isEmbeddedChain). */
  chainRpcUrl: string | null;
}

export const chainSettings = defineSettings({
  env: { CHAIN_RPC_URL: optionalUrl },
  load: (e): ChainConfig => ({ chainRpcUrl: e.CHAIN_RPC_URL ?? null }),
});

/** Embedded mode: no external chain, so the service runs its own devchain and dev helpers. */
export const isEmbeddedChain = (config: ChainConfig) => config.chainRpcUrl === null;
