import { getAddress, type Address } from 'viem';

/** A token the service accepts, with the EIP-712 domain facts signers need. */
export interface AssetInfo {
  network: string;
  address: Address;
  symbol: string;
  decimals: number;
  eip712: { name: string; version: string };
}

export interface NetworkInfo {
  /** CAIP-2 id, e.g. `eip155:4663`. */
  network: string;
  chainId: number;
  name: string;
}

export const USDG_ADDRESS: Address = '0x5fc5360D0400a0Fd4f2af552ADD042D716F1d168';

/** Networks and assets Tollgate knows. The first of each is the default. */
export const NETWORKS: NetworkInfo[] = [{ network: 'eip155:4663', chainId: 4663, name: 'Robinhood Chain' }];

export const ASSETS: AssetInfo[] = [
  {
    network: 'eip155:4663',
    address: USDG_ADDRESS,
    symbol: 'USDG',
    decimals: 6,
    eip712: { name: 'Global Dollar', version: '1' },
  },
];

export const DEFAULT_NETWORK = NETWORKS[0];
export const DEFAULT_ASSET = ASSETS[0];

export function findNetwork(network: string): NetworkInfo | undefined {
  return NETWORKS.find((n) => n.network === network);
}

/** Case-insensitive lookup of a token on a network. */
export function findAsset(network: string, address: string): AssetInfo | undefined {
  const wanted = address.toLowerCase();
  return ASSETS.find((a) => a.network === network && a.address.toLowerCase() === wanted);
}

export const caip2 = (chainId: number) => `eip155:${chainId}`;
export const checksum = (address: string): Address => getAddress(address);
