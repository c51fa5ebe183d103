// Permit2, the x402 Permit2 proxies and x402BatchSettlement on the devchain: the committed artifact is what the
// vendored sources compile to, every contract sits where @x402/evm 2.27 looks for it, and the code there is
// the real thing (its constructor ran at that address: Permit2's EIP-712 domain, the proxies' Permit2, the
// collectors' settlement contract; the batch contract derives the SDK's channel ids).
import { readFileSync } from 'node:fs';
import { PERMIT2_ADDRESS as SDK_PERMIT2, x402ExactPermit2ProxyAddress, x402UptoPermit2ProxyAddress } from '@x402/evm';
import { computeChannelId } from '@x402/evm/batch-settlement/client';
import { getAddress, hashDomain, parseAbi, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileX402Contracts, X402_CONTRACTS_ARTIFACT_PATH } from '../../scripts/build-x402-contracts.mjs';
import {
  BATCH_SETTLEMENT,
  ensureX402Contracts,
  ERC3009_DEPOSIT_COLLECTOR,
  EXACT_PERMIT2_PROXY,
  PERMIT2_ADDRESS,
  PERMIT2_DEPOSIT_COLLECTOR,
  UPTO_PERMIT2_PROXY,
  x402ContractArtifacts,
} from '../../src/chain/x402-contracts.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { randomAddress } from '../x402/support.js';

// Contracts on a devchain, no database: the PostgreSQL pass would run them again unchanged.
const noDatabaseTestOnPostgresPass = Boolean(process.env.DATABASE_URL);

describe.skipIf(noDatabaseTestOnPostgresPass)('x402 contracts artifact', () => {
  it('matches a fresh compile of contracts/permit2 and contracts/x402', { timeout: 300_000 }, () => {
    const committed = JSON.parse(readFileSync(X402_CONTRACTS_ARTIFACT_PATH, 'utf8')) as ReturnType<typeof compileX402Contracts>;
    const fresh = compileX402Contracts();
    expect(fresh.sourceHash).toBe(committed.sourceHash);
    expect(fresh.contracts).toEqual(committed.contracts);
  });
});

describe.skipIf(noDatabaseTestOnPostgresPass)('x402 contracts on the devchain', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await buildTestApp({ roles: [] });
  });
  afterAll(async () => app?.close());
  const client = () => app.ctx.chain.publicClient;

  it('sit at the addresses @x402/evm uses', async () => {
    expect(PERMIT2_ADDRESS).toBe(getAddress(SDK_PERMIT2));
    expect(EXACT_PERMIT2_PROXY).toBe(getAddress(x402ExactPermit2ProxyAddress));
    expect(UPTO_PERMIT2_PROXY).toBe(getAddress(x402UptoPermit2ProxyAddress));
    for (const contract of x402ContractArtifacts) {
      const code = await client().getCode({ address: contract.address });
      expect(code && code.length > 2, contract.name).toBe(true);
    }
  });

  it('run their constructors at those addresses', async () => {
    const read = <T>(address: Address, signature: string, functionName: string, args: unknown[] = []) =>
      client().readContract({ address, abi: parseAbi([signature]), functionName, args } as never) as Promise<T>;
    // Permit2 caches its EIP-712 domain at construction: it must name this chain and this address.
    const domain = hashDomain({ domain: { name: 'Permit2', chainId: 4663n, verifyingContract: PERMIT2_ADDRESS }, types: { EIP712Domain: [{ name: 'name', type: 'string' }, { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' }] } });
    expect(await read(PERMIT2_ADDRESS, 'function DOMAIN_SEPARATOR() view returns (bytes32)', 'DOMAIN_SEPARATOR')).toBe(domain);
    for (const proxy of [EXACT_PERMIT2_PROXY, UPTO_PERMIT2_PROXY]) {
      expect(await read(proxy, 'function PERMIT2() view returns (address)', 'PERMIT2')).toBe(PERMIT2_ADDRESS);
    }
    for (const collector of [ERC3009_DEPOSIT_COLLECTOR, PERMIT2_DEPOSIT_COLLECTOR]) {
      expect(await read(collector, 'function x402BatchSettlement() view returns (address)', 'x402BatchSettlement')).toBe(BATCH_SETTLEMENT);
    }
    expect(await read(PERMIT2_DEPOSIT_COLLECTOR, 'function PERMIT2() view returns (address)', 'PERMIT2')).toBe(PERMIT2_ADDRESS);
    // The batch contract's channel id is the SDK's (it binds the chain id and the contract's address).
    const config = {
      payer: randomAddress(),
      payerAuthorizer: randomAddress(),
      receiver: randomAddress(),
      receiverAuthorizer: randomAddress(),
      token: app.ctx.chain.asset.address,
      withdrawDelay: 900,
      salt: `0x${'11'.repeat(32)}` as const,
    };
    const onChain = await client().readContract({
      address: BATCH_SETTLEMENT,
      abi: parseAbi(['struct C { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }', 'function getChannelId(C config) view returns (bytes32)']),
      functionName: 'getChannelId',
      args: [config],
    });
    expect(onChain).toBe(computeChannelId(config, 'eip155:4663'));
  });

  it('are placed once: a restart on the same chain sends and changes nothing', async () => {
    const before = await client().getBlockNumber({ cacheTime: 0 });
    await ensureX402Contracts(client(), app.ctx.chain.rpcUrl);
    expect(await client().getBlockNumber({ cacheTime: 0 })).toBe(before);
  });
});
