// Bringing the payer's wallet to the intent's chain before it signs: switch (EIP-3326), and when the
// wallet does not know the chain (4902), add it (EIP-3085) and switch again; then offer it the token
// (EIP-747), best effort. Where the chain's facts come from: docs/web.md#hosted-checkout.
import { KNOWN_ASSETS } from '../shared/format.js';
import type { Eip1193 } from './x402.js';

/** What wallet_addEthereumChain needs (EIP-3085's AddEthereumChainParameter). */
export interface ChainFacts {
  chainId: string;
  chainName: string;
  rpcUrls: string[];
  nativeCurrency: { name: string; symbol: string; decimals: number };
}

const hex = (n: number) => `0x${n.toString(16)}`;

/** 4902: the wallet does not know the chain (some mobile wallets wrap it in data.originalError). */
function unknownChain(error: unknown): boolean {
  const e = error as { code?: unknown; data?: { originalError?: { code?: unknown } } } | null;
  return e?.code === 4902 || e?.data?.originalError?.code === 4902;
}

const declined = (error: unknown) => (error as { code?: unknown } | null)?.code === 4001;

/**
 * The chain's facts as this service publishes them: GET /dev/chain, which exists on the embedded devchain
 * only (its RPC URL is the local anvil's, named as src/chain/devchain.ts names the chain). Elsewhere the
 * service publishes no RPC URL (CHAIN_RPC_URL may carry a provider's key), so null: the payer adds the
 * network by hand or pays with an x402 client.
 */
export async function publishedChain(chainId: number): Promise<ChainFacts | null> {
  try {
    const response = await fetch('/dev/chain', { headers: { accept: 'application/json' }, cache: 'no-store' });
    if (!response.ok) return null;
    const dev = (await response.json()) as { rpcUrl?: unknown; chainId?: unknown };
    if (dev.chainId !== chainId || typeof dev.rpcUrl !== 'string' || !/^https?:\/\//.test(dev.rpcUrl)) return null;
    return { chainId: hex(chainId), chainName: 'Tollgate devchain', rpcUrls: [dev.rpcUrl], nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 } };
  } catch {
    return null;
  }
}

/**
 * Puts the wallet on `chainId`. Answers whether it had to move ('there' when it already was). A refusal by
 * the payer (4001) is thrown as is; a chain the wallet lacks and this service cannot describe is an error
 * in words.
 */
export async function useChain(wallet: Eip1193, chainId: number, facts = publishedChain): Promise<'there' | 'switched' | 'added'> {
  const current = Number.parseInt(String(await wallet.request({ method: 'eth_chainId' })), 16);
  if (current === chainId) return 'there';
  const target = [{ chainId: hex(chainId) }];
  try {
    await wallet.request({ method: 'wallet_switchEthereumChain', params: target });
    return 'switched';
  } catch (error) {
    if (declined(error)) throw error;
    if (!unknownChain(error)) throw new Error(`Switch your wallet to chain ${chainId} to pay.`);
  }
  const chain = await facts(chainId);
  if (!chain) throw new Error(`Your wallet does not know chain ${chainId}. Add that network to your wallet, or pay with an x402 client (see “Other ways to pay”).`);
  await wallet.request({ method: 'wallet_addEthereumChain', params: [chain] });
  // EIP-3085 lets a wallet add without switching: ask once more (a no-op for one that already switched).
  await wallet.request({ method: 'wallet_switchEthereumChain', params: target });
  return 'added';
}

/**
 * Offers the token to the wallet (wallet_watchAsset), so the payer sees the balance they pay from. EIP-747
 * cannot ask whether a wallet already tracks a token: this is called only after the wallet had to switch to
 * or add the chain, where it most likely does not. Best effort: a refusal, an unsupported method or an
 * unknown token changes nothing about paying.
 */
export async function offerToken(wallet: Eip1193, network: string, asset: string): Promise<void> {
  const token = KNOWN_ASSETS.find((a) => a.network === network && a.address.toLowerCase() === asset.toLowerCase());
  if (!token) return;
  try {
    await wallet.request({ method: 'wallet_watchAsset', params: { type: 'ERC20', options: { address: token.address, symbol: token.symbol, decimals: token.decimals } } });
  } catch {
    // The payer said no, or the wallet cannot: paying does not need it.
  }
}
