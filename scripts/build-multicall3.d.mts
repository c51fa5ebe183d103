export const MULTICALL3_SOURCE_PATH: string;
export const MULTICALL3_ARTIFACT_PATH: string;
export function compileMulticall3(source?: string): {
  contractName: string;
  compiler: string;
  abi: unknown[];
  deployedBytecode: `0x${string}`;
  sourceHash: string;
};
