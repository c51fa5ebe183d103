// npm run contracts:build — compiles contracts/USDG.sol into contracts/USDG.json.
// test/contracts/artifact.test.ts recompiles and fails if the committed artifact is stale.
import { writeFileSync } from 'node:fs';
import { compileUsdg, USDG_ARTIFACT_PATH } from './compile-contracts.mjs';

const artifact = compileUsdg();
writeFileSync(USDG_ARTIFACT_PATH, `${JSON.stringify(artifact, null, 2)}\n`);
const runtimeBytes = (artifact.deployedBytecode.length - 2) / 2;
console.log(`wrote ${USDG_ARTIFACT_PATH} (${runtimeBytes} bytes runtime, source sha256 ${artifact.sourceHash})`);
