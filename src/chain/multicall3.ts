// Multicall3 on the devchain. Public chains have it at the canonical address; anvil does not, and
// without it the x402 facilitator cannot diagnose a failed simulation (every failure becomes the
// generic `invalid_exact_evm_transaction_simulation_failed`). Our contracts/Multicall3.sol has the
// same ABI; scripts/build-multicall3.mjs compiles it into the committed artifact read here.
import { readFileSync } from 'node:fs';
import { parseAbi, prepareEncodeFunctionData, type Address, type Hex, type PublicClient } from 'viem';
import { rpcCall } from './rpc.js';
import { projectPath } from '../platform/project-root.js';

export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11';

export const aggregate3Abi = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'struct Result { bool success; bytes returnData; }',
  'function aggregate3(Call3[] calls) payable returns (Result[] returnData)',
]);
/** Prepared once: viem's encodeFunctionData would hash the signature on every call. */
export const aggregate3Fn = prepareEncodeFunctionData({ abi: aggregate3Abi, functionName: 'aggregate3' });
export type Call3 = { target: Address; allowFailure: boolean; callData: Hex };

export const multicall3DeployedBytecode: Hex = (
  JSON.parse(readFileSync(projectPath('contracts', 'Multicall3.json'), 'utf8')) as { deployedBytecode: Hex }
).deployedBytecode;

/** Places the code with anvil_setCode unless it is already there (state survives restarts). */
export async function ensureMulticall3(client: PublicClient, rpcUrl: string): Promise<void> {
  const code = await client.getCode({ address: MULTICALL3_ADDRESS });
  if ((code ?? '0x').toLowerCase() === multicall3DeployedBytecode.toLowerCase()) return;
  await rpcCall(rpcUrl, 'anvil_setCode', [MULTICALL3_ADDRESS, multicall3DeployedBytecode]);
}
