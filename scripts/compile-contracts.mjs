// Compiles contracts with the pinned solc npm package. Shared by build-contracts.mjs (writes the
// artifact) and the artifact test (recompiles in memory and compares), so both use one setting set.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import solc from 'solc';

export const USDG_SOURCE_PATH = fileURLToPath(new URL('../contracts/USDG.sol', import.meta.url));
export const USDG_ARTIFACT_PATH = fileURLToPath(new URL('../contracts/USDG.json', import.meta.url));

// Deterministic: fixed compiler, optimizer and EVM version; no CBOR metadata tail, so the bytecode
// depends only on the code (comment edits do not change it; sourceHash still tracks them).
// cancun: supported by anvil's default (latest) hardfork and by every current L2.
export const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { appendCBOR: false, bytecodeHash: 'none' },
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
};

/**
 * Compiles { fileName: source } and returns { [contractName]: { abi, bytecode, deployedBytecode } }.
 * Throws on any compiler error (warnings are ignored).
 */
export function compileSolidity(sources) {
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(Object.entries(sources).map(([file, content]) => [file, { content }])),
    settings: SOLC_SETTINGS,
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contracts = {};
  for (const file of Object.keys(output.contracts ?? {})) {
    for (const [contractName, c] of Object.entries(output.contracts[file])) {
      contracts[contractName] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      };
    }
  }
  return contracts;
}

export function sha256Hex(text) {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The USDG artifact exactly as it is committed in contracts/USDG.json. */
export function compileUsdg(source = readFileSync(USDG_SOURCE_PATH, 'utf8')) {
  const { USDG } = compileSolidity({ 'USDG.sol': source });
  if (!USDG) throw new Error('USDG contract missing from compiler output');
  return {
    contractName: 'USDG',
    compiler: `solc ${solc.version()}`,
    abi: USDG.abi,
    bytecode: USDG.bytecode,
    deployedBytecode: USDG.deployedBytecode,
    sourceHash: sha256Hex(source),
  };
}
