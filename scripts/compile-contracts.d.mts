// Types for compile-contracts.mjs so TypeScript tests can import it under strict mode.
export interface CompiledContract {
  abi: readonly Record<string, unknown>[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}
export interface UsdgArtifact extends CompiledContract {
  contractName: 'USDG';
  compiler: string;
  sourceHash: string;
}
export const USDG_SOURCE_PATH: string;
export const USDG_ARTIFACT_PATH: string;
export const SOLC_SETTINGS: Record<string, unknown>;
export function compileSolidity(sources: Record<string, string>): Record<string, CompiledContract>;
export function sha256Hex(text: string): string;
export function compileUsdg(source?: string): UsdgArtifact;
