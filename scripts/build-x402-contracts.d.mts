// Types for build-x402-contracts.mjs so TypeScript tests can import it under strict mode.
export interface X402ContractBuild {
  name: string;
  source: string;
  compiler: string;
  address: `0x${string}`;
  placement: 'create2' | 'constructor-at-address';
  salt?: `0x${string}`;
  initCode: `0x${string}`;
}
export const X402_CONTRACTS_ARTIFACT_PATH: string;
export const CREATE2_DEPLOYER: `0x${string}`;
export const PERMIT2_ADDRESS: `0x${string}`;
export function compileX402Contracts(): { create2Deployer: `0x${string}`; sourceHash: string; contracts: X402ContractBuild[] };
