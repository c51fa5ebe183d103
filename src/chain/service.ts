// ctx.chain: which chain Tollgate pays on, a read client for it, the facilitator's relayer key, and
// in embedded mode the devchain itself. Started before the modules, closed after them.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { createPublicClient, defineChain, http, type Address, type Chain, type PublicClient } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { isEmbeddedChain, type Config } from '../config.js';
import { loadOrCreateDevSecret } from '../platform/data-dir.js';
import { Devchain, devchainChain } from './devchain.js';
import { ensureMulticall3 } from './multicall3.js';
import { ASSETS, caip2, findNetwork, type AssetInfo } from './registry.js';

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
  /** The facilitator's relayer key: FACILITATOR_PRIVATE_KEY, or a dev key in the data dir (embedded only). */
  readonly relayer: PrivateKeyAccount | null;
  /** Addresses that send our facilitator's settlement transactions (the indexer follows these). */
  facilitatorSigners(): Address[];
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
  const relayer = relayerAccount(config, options.ephemeral === true);
  if (!isEmbeddedChain(config)) return connectRemote(config.chainRpcUrl!, relayer);

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
    const publicClient = createPublicClient({ chain: viemChain, transport: http(devchain.rpcUrl, { retryCount: 1 }), pollingInterval: 100 });
    await ensureMulticall3(publicClient, devchain.rpcUrl);
    if (relayer) await devchain.fundGas(relayer.address);
    const network = findNetwork(caip2(devchain.chainId))!;
    return build({ network: network.network, chainId: devchain.chainId, rpcUrl: devchain.rpcUrl, viemChain, publicClient, devchain, relayer });
  } catch (error) {
    await devchain.stop();
    throw error;
  }
}

async function connectRemote(rpcUrl: string, relayer: PrivateKeyAccount | null): Promise<ChainService> {
  const probe = createPublicClient({ transport: http(rpcUrl) });
  const chainId = await probe.getChainId();
  const network = findNetwork(caip2(chainId));
  if (!network) throw new ChainConfigError(`CHAIN_RPC_URL serves chain ${chainId}, which is not in the network registry`);
  const viemChain = defineChain({
    id: chainId,
    name: network.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const publicClient = createPublicClient({ chain: viemChain, transport: http(rpcUrl, { retryCount: 2 }), pollingInterval: 500 });
  return build({ network: network.network, chainId, rpcUrl, viemChain, publicClient, devchain: null, relayer });
}

function build(parts: Omit<ChainService, 'asset' | 'facilitatorSigners' | 'close'>): ChainService {
  const asset = ASSETS.find((a) => a.network === parts.network);
  if (!asset) throw new ChainConfigError(`no asset registered for ${parts.network}`);
  return {
    ...parts,
    asset,
    facilitatorSigners: () => (parts.relayer ? [parts.relayer.address] : []),
    close: async () => {
      await parts.devchain?.stop();
    },
  };
}

/** The relayer pays gas only; in embedded mode a dev key is generated into the data dir. */
function relayerAccount(config: Config, ephemeral: boolean): PrivateKeyAccount | null {
  let key = config.facilitatorPrivateKey;
  if (!key && isEmbeddedChain(config)) {
    const generate = () => `0x${randomBytes(32).toString('hex')}`;
    key = loadOrCreateDevSecret(ephemeral ? null : config.dataDir, 'facilitator-key', generate);
  }
  if (!key) return null;
  return privateKeyToAccount((key.startsWith('0x') ? key : `0x${key}`) as `0x${string}`);
}
