// node scripts/build-x402-contracts.mjs — compiles the contracts the x402 schemes beyond EIP-3009 `exact` need
// (Permit2, the x402 Permit2 proxies, x402BatchSettlement and its deposit collectors) from the sources vendored
// under contracts/permit2 and contracts/x402, and writes contracts/x402-contracts.json: per contract its creation
// code (constructor arguments appended), the address @x402/evm expects it at, and how the devchain puts it there
// (src/chain/x402-contracts.ts). test/contracts/x402-contracts.test.ts recompiles and fails if the artifact is stale.
//
// Each build uses its upstream's own compiler and settings (the pragmas allow them; versions pinned in package.json):
// - Uniswap/permit2@cc56ad0f3439c502c246fc5cfcc3db92bb8b7219 (its foundry.toml: solc 0.8.17, via-IR, 1,000,000
//   optimizer runs, bytecode_hash none). solmate's ERC20 and SafeTransferLib are AGPL-3.0-only and not vendored:
//   contracts/permit2/solmate holds MIT stand-ins under solmate's import paths. The canonical Permit2 bytecode is
//   therefore not reproduced, so CREATE2 cannot land it at 0x0000…8BA3: the devchain runs its constructor there.
// - x402-foundation/x402 contracts/evm (its foundry.toml: solc 0.8.28, 200 runs, cancun, no CBOR metadata) with
//   OpenZeppelin v5.5.0 (fcbae5394ae8ad52d8e580a3477db99814b9d565, its submodule pin). These compile to the bytes the
//   upstream deployed: Arachnid's CREATE2 deployer with the upstream salts lands x402UptoPermit2Proxy,
//   x402BatchSettlement and both collectors exactly at the addresses @x402/evm 2.27 uses (checked below). The
//   exact proxy's canonical deployment predates deterministic builds (its initcode carries CBOR metadata), so it is
//   placed like Permit2.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { concat, encodeAbiParameters, getContractAddress } from 'viem';
import { sha256Hex } from './compile-contracts.mjs';

const require = createRequire(import.meta.url);
const CONTRACTS_DIR = fileURLToPath(new URL('../contracts', import.meta.url));
export const X402_CONTRACTS_ARTIFACT_PATH = join(CONTRACTS_DIR, 'x402-contracts.json');

/** Arachnid's deterministic deployment proxy: the CREATE2 deployer the upstream scripts use (same address everywhere). */
export const CREATE2_DEPLOYER = '0x4e59b44847b379578588920cA78FbF26c0B4956C';
export const PERMIT2_ADDRESS = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
const BATCH_SETTLEMENT = '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003';

const PERMIT2_SETTINGS = {
  viaIR: true,
  optimizer: { enabled: true, runs: 1_000_000 },
  evmVersion: 'london',
  metadata: { bytecodeHash: 'none' },
  outputSelection: { '*': { '*': ['evm.bytecode.object'] } },
};
const X402_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { appendCBOR: false, bytecodeHash: 'none' },
  outputSelection: { '*': { '*': ['evm.bytecode.object'] } },
};

// Salts and addresses: x402-foundation/x402 contracts/evm/script/Deploy.s.sol (UPTO_SALT, as of coinbase/x402
// dd927a26) and DeployBatchSettlement.s.sol (ded41309); addresses: @x402/evm 2.27 constants.
const UPTO_SALT = '0x000000000000000000000000000000000000000000000000b000000001db633d';
const BATCH_SALT = '0x000000000000000000000000000000000000000000000000e000000005be885c';
const ERC3009_COLLECTOR_SALT = '0x0000000000000000000000000000000000000000000000001800000007a95284';
const PERMIT2_COLLECTOR_SALT = '0x000000000000000000000000000000000000000000000000f800000001a5d4ff';

/** Every .sol file under `dir`, keyed by the import path the upstream build uses (see `keyOf`). */
function sourcesUnder(dir, keyOf) {
  const sources = {};
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.sol')) sources[keyOf(relative(dir, path).split(sep).join('/'))] = readFileSync(path, 'utf8');
    }
  };
  walk(dir);
  return sources;
}

function compile(solcPackage, sources, settings) {
  const solc = require(solcPackage);
  const input = { language: 'Solidity', sources: Object.fromEntries(Object.entries(sources).map(([k, content]) => [k, { content }])), settings };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  return { version: solc.version(), creation: (file, name) => `0x${output.contracts[file][name].evm.bytecode.object}` };
}

const arg = (types, values) => encodeAbiParameters(types.map((type) => ({ type })), values);
const create2 = (salt, initCode) => getContractAddress({ opcode: 'CREATE2', from: CREATE2_DEPLOYER, salt, bytecode: initCode });

export function compileX402Contracts() {
  const permit2Sources = sourcesUnder(join(CONTRACTS_DIR, 'permit2'), (p) => (p.startsWith('solmate/') ? p : `src/${p}`));
  const x402Sources = sourcesUnder(join(CONTRACTS_DIR, 'x402'), (p) => (p.startsWith('openzeppelin/') ? `@openzeppelin/contracts/${p.slice('openzeppelin/'.length)}` : `src/${p}`));
  const permit2 = compile('solc-0.8.17', permit2Sources, PERMIT2_SETTINGS);
  const x402 = compile('solc-0.8.28', x402Sources, X402_SETTINGS);
  const p2 = arg(['address'], [PERMIT2_ADDRESS]);
  const contracts = [
    {
      name: 'Permit2',
      source: 'Uniswap/permit2@cc56ad0f3439c502c246fc5cfcc3db92bb8b7219 src/Permit2.sol (solmate stand-ins: contracts/permit2/solmate)',
      compiler: `solc ${permit2.version}`,
      address: PERMIT2_ADDRESS,
      placement: 'constructor-at-address',
      initCode: permit2.creation('src/Permit2.sol', 'Permit2'),
    },
    {
      name: 'x402ExactPermit2Proxy',
      source: 'x402-foundation/x402 (coinbase/x402@dd927a26cfefc98c24b3ec38b3a8f204dad0c60d) contracts/evm/src/x402ExactPermit2Proxy.sol',
      compiler: `solc ${x402.version}`,
      address: '0x402085c248EeA27D92E8b30b2C58ed07f9E20001',
      placement: 'constructor-at-address',
      initCode: concat([x402.creation('src/x402ExactPermit2Proxy.sol', 'x402ExactPermit2Proxy'), p2]),
    },
    {
      name: 'x402UptoPermit2Proxy',
      source: 'x402-foundation/x402 (coinbase/x402@dd927a26cfefc98c24b3ec38b3a8f204dad0c60d) contracts/evm/src/x402UptoPermit2Proxy.sol',
      compiler: `solc ${x402.version}`,
      address: '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002',
      placement: 'create2',
      salt: UPTO_SALT,
      initCode: concat([x402.creation('src/x402UptoPermit2Proxy.sol', 'x402UptoPermit2Proxy'), p2]),
    },
    {
      name: 'x402BatchSettlement',
      source: 'x402-foundation/x402@3d73f63f7e0454bc9f3d2d268a347b4f060850af contracts/evm/src/x402BatchSettlement.sol',
      compiler: `solc ${x402.version}`,
      address: BATCH_SETTLEMENT,
      placement: 'create2',
      salt: BATCH_SALT,
      initCode: x402.creation('src/x402BatchSettlement.sol', 'x402BatchSettlement'),
    },
    {
      name: 'ERC3009DepositCollector',
      source: 'x402-foundation/x402@5dc34292c9381881c2f57e4d87ae14b59acc9cef contracts/evm/src/periphery/ERC3009DepositCollector.sol',
      compiler: `solc ${x402.version}`,
      address: '0x4020806089470a89826cB9fB1f4059150b550004',
      placement: 'create2',
      salt: ERC3009_COLLECTOR_SALT,
      initCode: concat([x402.creation('src/periphery/ERC3009DepositCollector.sol', 'ERC3009DepositCollector'), arg(['address'], [BATCH_SETTLEMENT])]),
    },
    {
      name: 'Permit2DepositCollector',
      source: 'x402-foundation/x402@242573a62b78bb8c281d5b17ea5e2ba3b81d6c1d contracts/evm/src/periphery/Permit2DepositCollector.sol',
      compiler: `solc ${x402.version}`,
      address: '0x4020425FAf3B746C082C2f942b4E5159887B0005',
      placement: 'create2',
      salt: PERMIT2_COLLECTOR_SALT,
      initCode: concat([
        x402.creation('src/periphery/Permit2DepositCollector.sol', 'Permit2DepositCollector'),
        arg(['address', 'address'], [BATCH_SETTLEMENT, PERMIT2_ADDRESS]),
      ]),
    },
  ];
  // The deterministic builds must land where the SDK looks: a source or setting drift fails the build, not a payment.
  for (const c of contracts) {
    if (c.placement === 'create2' && create2(c.salt, c.initCode) !== c.address) {
      throw new Error(`${c.name}: CREATE2 lands at ${create2(c.salt, c.initCode)}, not ${c.address}: the sources or settings differ from upstream`);
    }
  }
  const allSources = { ...permit2Sources, ...Object.fromEntries(Object.entries(x402Sources).map(([k, v]) => [`x402:${k}`, v])) };
  const sourceHash = sha256Hex(JSON.stringify(Object.keys(allSources).sort().map((k) => [k, allSources[k]])));
  return { create2Deployer: CREATE2_DEPLOYER, sourceHash, contracts };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const artifact = compileX402Contracts();
  writeFileSync(X402_CONTRACTS_ARTIFACT_PATH, `${JSON.stringify(artifact, null, 2)}\n`);
  for (const c of artifact.contracts) console.log(`${c.name}: ${c.address} (${c.placement}, ${(c.initCode.length - 2) / 2} bytes of creation code)`);
  console.log(`wrote ${X402_CONTRACTS_ARTIFACT_PATH}`);
}
