// ctx.chain: which chain Tollgate pays on, a read client for it, the facilitator's relayer key, and
// in embedded mode the devchain itself. Started before the modules, closed after them.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { createPublicClient, defineChain, type Address, type Chain, type PublicClient } from 'viem';
import { privateKeyToAccount, type LocalAccount } from 'viem/accounts';
import type { Config } from '../config.js';
import { isEmbeddedChain } from './settings.js';
import { loadOrCreateDevSecret } from '../platform/data-dir.js';
import { AwsKms } from '../platform/aws-kms.js';
import { createBlockClock, type BlockClock } from './block-clock.js';
import { Devchain, devchainChain } from './devchain.js';
import { ensureMulticall3 } from './multicall3.js';
import { ensureX402Contracts } from './x402-contracts.js';
import { ASSETS, caip2, findNetwork, type AssetInfo } from './registry.js';
import { rpcTransport } from './rpc-fetch.js';

export interface ChainService {
  /** CAIP-2 id of the chain, e.g. `eip155:4663`. */
  readonly network: string;
  readonly chainId: number;
  readonly rpcUrl: string;
  readonly viemChain: Chain;
  readonly publicClient: PublicClient;
  /** The default asset on this network (USDG). */
  readonly asset: AssetInfo;
  /** The embedded anvil devchain; null when CHAIN_RPC_URL points at a real chain. */
  readonly devchain: Devchain | null;
  /** The first relayer key (the only one unless a pool is configured); null when there is none. */
  readonly relayer: LocalAccount | null;
  /**
   * The facilitator's relayer pool: FACILITATOR_PRIVATE_KEYS (or FACILITATOR_PRIVATE_KEY), keys in AWS KMS
   * (FACILITATOR_KMS_KEY_IDS), or on the embedded devchain FACILITATOR_RELAYER_COUNT dev keys in the data
   * dir (default one). Empty when none.
   */
  readonly relayers: readonly LocalAccount[];
  /** Addresses that send our facilitator's settlement transactions: every pool key (the indexer follows these). */
  facilitatorSigners(): Address[];
  /**
   * The chain's time (latest block timestamp, seconds; cached up to 1 s) for on-chain verdicts. On
   * the devchain it first mines an empty block if the chain has fallen behind the wall clock.
   */
  readonly blockTime: BlockClock;
  close(): Promise<void>;
}

export interface ChainServiceOptions {
  config: Config;
  log: Logger;
  /** Tests: a throwaway devchain (no state file) and an in-memory relayer key. */
  ephemeral?: boolean;
}

export class ChainConfigError extends Error {}

export async function startChainService(options: ChainServiceOptions): Promise<ChainService> {
  const { config, log } = options;
  const relayers = await relayerAccounts(config, options.ephemeral === true);
  if (!isEmbeddedChain(config)) return connectRemote(config.chainRpcUrl!, relayers);

  const devchain = new Devchain({
    dataDir: options.ephemeral ? null : config.dataDir,
    port: config.ports.devchain,
    logger: {
      info: (msg) => log.info(msg),
      warn: (msg) => log.warn(msg),
      error: (msg) => log.error(msg),
    },
  });
  await devchain.start();
  try {
    const viemChain = devchainChain(devchain.rpcUrl);
    // Automine: receipts exist as soon as a send returns, so poll fast.
    const publicClient = createPublicClient({ chain: viemChain, transport: rpcTransport(devchain.rpcUrl, { retryCount: 1 }), pollingInterval: 100 });
    await ensureMulticall3(publicClient, devchain.rpcUrl);
    // Permit2, the x402 proxies and x402BatchSettlement (upto, batch-settlement, exact over Permit2).
    await ensureX402Contracts(publicClient, devchain.rpcUrl);
    // Every lane pays its own gas.
    for (const relayer of relayers) await devchain.fundGas(relayer.address);
    const network = findNetwork(caip2(devchain.chainId))!;
    return build({ network: network.network, chainId: devchain.chainId, rpcUrl: devchain.rpcUrl, viemChain, publicClient, devchain, relayers });
  } catch (error) {
    await devchain.stop();
    throw error;
  }
}

async function connectRemote(rpcUrl: string, relayers: LocalAccount[]): Promise<ChainService> {
  const probe = createPublicClient({ transport: rpcTransport(rpcUrl) });
  const chainId = await probe.getChainId();
  const network = findNetwork(caip2(chainId));
  if (!network) throw new ChainConfigError(`CHAIN_RPC_URL serves chain ${chainId}, which is not in the network registry`);
  const viemChain = defineChain({
    id: chainId,
    name: network.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const publicClient = createPublicClient({ chain: viemChain, transport: rpcTransport(rpcUrl, { retryCount: 2 }), pollingInterval: 500 });
  return build({ network: network.network, chainId, rpcUrl, viemChain, publicClient, devchain: null, relayers });
}

function build(parts: Omit<ChainService, 'asset' | 'relayer' | 'facilitatorSigners' | 'blockTime' | 'close'>): ChainService {
  const asset = ASSETS.find((a) => a.network === parts.network);
  if (!asset) throw new ChainConfigError(`no asset registered for ${parts.network}`);
  return {
    ...parts,
    asset,
    relayer: parts.relayers[0] ?? null,
    facilitatorSigners: () => parts.relayers.map((r) => r.address),
    blockTime: createBlockClock(parts.publicClient, parts.devchain),
    close: async () => {
      await parts.devchain?.stop();
    },
  };
}

/**
 * The relayer keys pay gas only. KMS keys or given keys win; in embedded mode FACILITATOR_RELAYER_COUNT dev
 * keys are generated into the data dir (the first keeps its old file name, so an existing dev relayer stays).
 */
async function relayerAccounts(config: Config, ephemeral: boolean): Promise<LocalAccount[]> {
  if (config.facilitatorKmsKeyIds.length > 0) {
    if (config.walletKeys.provider !== 'aws-kms') throw new ChainConfigError('FACILITATOR_KMS_KEY_IDS needs WALLET_KEY_PROVIDER=aws-kms');
    const kms = new AwsKms(config.walletKeys);
    return Promise.all(config.facilitatorKmsKeyIds.map((keyId) => kms.account(keyId)));
  }
  let keys = config.facilitatorPrivateKeys;
  if (keys.length === 0 && isEmbeddedChain(config)) {
    const generate = () => `0x${randomBytes(32).toString('hex')}`;
    keys = Array.from({ length: config.facilitatorRelayerCount }, (_, i) =>
      loadOrCreateDevSecret(ephemeral ? null : config.dataDir, i === 0 ? 'facilitator-key' : `facilitator-key-${i + 1}`, generate),
    );
  }
  return keys.map((key) => privateKeyToAccount((key.startsWith('0x') ? key : `0x${key}`) as `0x${string}`));
}
