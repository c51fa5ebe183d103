// The contracts x402 needs beyond the token itself, at the addresses @x402/evm 2.27 uses: Uniswap's Permit2, the
// x402 Permit2 proxies (exact and upto), and x402BatchSettlement with its two deposit collectors. Public chains
// have them (or can: anyone may deploy them); the devchain gets them here, from contracts/x402-contracts.json,
// which scripts/build-x402-contracts.mjs compiles from the vendored sources (provenance in that script).
//
// Two ways onto the devchain, as on a real chain where possible:
// - `create2`: the creation code goes through Arachnid's deterministic deployer with the upstream salt, exactly
//   as the upstream deploy scripts do; the build checked that this lands at the SDK's address.
// - `constructor-at-address`: where CREATE2 cannot reproduce the canonical address (Permit2, built here without
//   solmate's AGPL files; the exact proxy, whose canonical bytecode carries build metadata), the constructor is run
//   at that address (an eth_call with the creation code overriding the address's code: address(this) and the
//   chain id are the real ones, so Permit2's cached EIP-712 domain is right) and the code it returns is set there.
import { readFileSync } from 'node:fs';
import { concat, getAddress, type Address, type Hex, type PublicClient } from 'viem';
import { rpcCall } from './rpc.js';
import { projectPath } from '../platform/project-root.js';

export interface X402ContractArtifact {
  name: 'Permit2' | 'x402ExactPermit2Proxy' | 'x402UptoPermit2Proxy' | 'x402BatchSettlement' | 'ERC3009DepositCollector' | 'Permit2DepositCollector';
  source: string;
  compiler: string;
  address: Address;
  placement: 'create2' | 'constructor-at-address';
  salt?: Hex;
  initCode: Hex;
}

/** Arachnid's deterministic deployment proxy (github.com/Arachnid/deterministic-deployment-proxy): its runtime code. */
export const CREATE2_DEPLOYER: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';
const CREATE2_DEPLOYER_CODE: Hex = '0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3';
/** anvil's account 0 (unlocked): sends the CREATE2 deployments. */
const DEPLOYER_ACCOUNT: Address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

export const x402ContractArtifacts: readonly X402ContractArtifact[] = (JSON.parse(readFileSync(projectPath('contracts', 'x402-contracts.json'), 'utf8')) as { contracts: X402ContractArtifact[] }).contracts;

const addressOf = (name: X402ContractArtifact['name']): Address => getAddress(x402ContractArtifacts.find((c) => c.name === name)!.address);

export const PERMIT2_ADDRESS = addressOf('Permit2');
export const EXACT_PERMIT2_PROXY = addressOf('x402ExactPermit2Proxy');
export const UPTO_PERMIT2_PROXY = addressOf('x402UptoPermit2Proxy');
export const BATCH_SETTLEMENT = addressOf('x402BatchSettlement');
export const ERC3009_DEPOSIT_COLLECTOR = addressOf('ERC3009DepositCollector');
export const PERMIT2_DEPOSIT_COLLECTOR = addressOf('Permit2DepositCollector');

/** Places every contract unless it is already there (devchain state survives restarts). Embedded devchain only. */
export async function ensureX402Contracts(client: PublicClient, rpcUrl: string): Promise<void> {
  if (!sameCode(await client.getCode({ address: CREATE2_DEPLOYER }), CREATE2_DEPLOYER_CODE)) {
    await rpcCall(rpcUrl, 'anvil_setCode', [CREATE2_DEPLOYER, CREATE2_DEPLOYER_CODE]);
  }
  for (const contract of x402ContractArtifacts) {
    const address = getAddress(contract.address);
    if (contract.placement === 'create2') {
      // One CREATE2 address holds one creation code's result: code there is this contract.
      if (hasCode(await client.getCode({ address }))) continue;
      const hash = await rpcCall<Hex>(rpcUrl, 'eth_sendTransaction', [{ from: DEPLOYER_ACCOUNT, to: CREATE2_DEPLOYER, data: concat([contract.salt!, contract.initCode]), gas: '0x1c9c380' }]);
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
      if (receipt.status !== 'success' || !hasCode(await client.getCode({ address }))) throw new Error(`${contract.name}: the CREATE2 deployment did not land at ${address}`);
      continue;
    }
    const { data: runtime } = await client.call({ to: address, data: '0x', stateOverride: [{ address, code: contract.initCode }] });
    if (!runtime || !hasCode(runtime)) throw new Error(`${contract.name}: its constructor returned no code`);
    if (!sameCode(await client.getCode({ address }), runtime)) await rpcCall(rpcUrl, 'anvil_setCode', [address, runtime]);
  }
}

const hasCode = (code: Hex | undefined): boolean => code !== undefined && code !== '0x';
const sameCode = (a: Hex | undefined, b: Hex): boolean => (a ?? '0x').toLowerCase() === b.toLowerCase();
