// node scripts/build-multicall3.mjs — compiles contracts/Multicall3.sol into contracts/Multicall3.json.
// test/x402/multicall3.test.ts recompiles and fails if the committed artifact is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import solc from 'solc';
import { compileSolidity, sha256Hex } from './compile-contracts.mjs';

export const MULTICALL3_SOURCE_PATH = fileURLToPath(new URL('../contracts/Multicall3.sol', import.meta.url));
export const MULTICALL3_ARTIFACT_PATH = fileURLToPath(new URL('../contracts/Multicall3.json', import.meta.url));

export function compileMulticall3(source = readFileSync(MULTICALL3_SOURCE_PATH, 'utf8')) {
  const { Multicall3 } = compileSolidity({ 'Multicall3.sol': source });
  if (!Multicall3) throw new Error('Multicall3 contract missing from compiler output');
  return {
    contractName: 'Multicall3',
    compiler: `solc ${solc.version()}`,
    abi: Multicall3.abi,
    deployedBytecode: Multicall3.deployedBytecode,
    sourceHash: sha256Hex(source),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const artifact = compileMulticall3();
  writeFileSync(MULTICALL3_ARTIFACT_PATH, `${JSON.stringify(artifact, null, 2)}\n`);
  console.log(`wrote ${MULTICALL3_ARTIFACT_PATH} (${(artifact.deployedBytecode.length - 2) / 2} bytes runtime)`);
}
