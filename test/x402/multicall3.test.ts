// Multicall3 on the devchain: the committed artifact is what the source compiles to, and the
// contract answers viem's aggregate3 batching and the facilitator's tryAggregate diagnosis.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbi } from 'viem';
import { compileMulticall3, MULTICALL3_ARTIFACT_PATH } from '../../scripts/build-multicall3.mjs';
import { eip3009Abi } from '../../src/chain/eip3009.js';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { fundedPayer, randomAddress } from './support.js';

describe('Multicall3 artifact', () => {
  it('matches a fresh compile of contracts/Multicall3.sol', { timeout: 60_000 }, () => {
    const committed = JSON.parse(readFileSync(MULTICALL3_ARTIFACT_PATH, 'utf8')) as Record<string, unknown>;
    const fresh = compileMulticall3();
    expect(fresh.sourceHash).toBe(committed.sourceHash);
    expect(fresh.deployedBytecode).toBe(committed.deployedBytecode);
  });
});

describe('Multicall3 on the devchain', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ roles: [] });
  });
  afterAll(async () => app?.close());

  it('aggregates reads (aggregate3) with per-call failures', async () => {
    const payer = await fundedPayer(app, '2.5');
    const usdg = app.ctx.chain.asset.address;
    const results = await app.ctx.chain.publicClient.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      contracts: [
        { address: usdg, abi: eip3009Abi, functionName: 'balanceOf', args: [payer.address] },
        { address: usdg, abi: parseAbi(['function decimals() view returns (uint8)']), functionName: 'decimals' },
        { address: randomAddress(), abi: parseAbi(['function decimals() view returns (uint8)']), functionName: 'decimals' },
      ],
    });
    expect(results[0]).toEqual({ status: 'success', result: 2_500_000n });
    expect(results[1]).toEqual({ status: 'success', result: 6 });
    expect(results[2].status).toBe('failure');
  });

  it('answers tryAggregate and the block getters', async () => {
    const abi = parseAbi([
      'struct Call { address target; bytes callData; }',
      'struct Result { bool success; bytes returnData; }',
      // payable on chain; declared view here so readContract (eth_call) accepts it
      'function tryAggregate(bool requireSuccess, Call[] calls) view returns (Result[])',
      'function getChainId() view returns (uint256)',
    ]);
    const client = app.ctx.chain.publicClient;
    expect(await client.readContract({ address: MULTICALL3_ADDRESS, abi, functionName: 'getChainId' })).toBe(4663n);
    const [result] = await client.readContract({
      address: MULTICALL3_ADDRESS,
      abi,
      functionName: 'tryAggregate',
      args: [false, [{ target: MULTICALL3_ADDRESS, callData: '0x3408e470' as const /* getChainId() */ }]],
    });
    expect(result.success).toBe(true);
    expect(BigInt(result.returnData)).toBe(4663n);
  });
});
