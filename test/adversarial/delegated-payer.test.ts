// A payer who turns its EOA into code after our check: it passes the settle's eth_getCode (an EOA, a 65-byte
// signature, simulated: it joins a Multicall3 batch), then delegates its account through EIP-7702 in the block
// that carries our batch, ordered before it (a higher priority fee is enough). On a token that asks a signer's
// code before trying ECDSA (USDC's FiatToken v2.2 order; USDG tries ECDSA first, so this file runs a USDC-order
// build of it), the signature check runs the payer's code with the gas the batch forwards: it burns it, and every
// later call in the batch runs out. Those payments were honest and still verify: each is sent again, alone, once,
// and pays; the attacker's is refused (payer_has_code) and never sent again at our gas.
import { readFileSync } from 'node:fs';
import type { SettleResponse } from '@x402/core/types';
import { createWalletClient, getAddress, http, parseGwei, type Address, type Hash, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSolidity } from '../../scripts/compile-contracts.mjs';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { rpcCall } from '../../src/chain/rpc.js';
import { requirementsFor } from '../facilitator/support.js';
import { buildTestApp, type TestApp } from '../helpers/test-app.js';
import { balanceOf, fundedPayer, nonceOf, signAuthorization, transfersForNonce } from '../x402/support.js';
import { reportTally, tally } from './support.js';

const usdg = readFileSync(new URL('../../contracts/USDG.sol', import.meta.url), 'utf8');
const ecdsaFirst = `        if (signature.length == 65 && _recover(digest, signature) == signer) return true;
        if (signer.code.length == 0) return false;
        (bool ok, bytes memory ret) =
            signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, signature));
        return ok && ret.length >= 32 && abi.decode(ret, (bytes32)) == bytes32(ERC1271_MAGIC);`;
const codeFirst = `        if (signer.code.length > 0) {
            (bool ok, bytes memory ret) =
                signer.staticcall(abi.encodeWithSelector(ERC1271_MAGIC, digest, signature));
            return ok && ret.length >= 32 && abi.decode(ret, (bytes32)) == bytes32(ERC1271_MAGIC);
        }
        return signature.length == 65 && _recover(digest, signature) == signer;`;
if (!usdg.includes(ecdsaFirst)) throw new Error("USDG's signature check changed: update this file's USDC-order build");
const compiled = compileSolidity({
  'USDG.sol': usdg.replace(ecdsaFirst, codeFirst),
  'GasBurningWallet.sol': readFileSync(new URL('../../contracts/test/GasBurningWallet.sol', import.meta.url), 'utf8'),
});

let app: TestApp;
beforeAll(async () => {
  // One relayer key, and batches held for company (4 s: the five settles below join one Multicall3 transaction even on a loaded machine).
  app = await buildTestApp({ roles: ['facilitator'], env: { FACILITATOR_BATCH_MAX_CALLS: '64', FACILITATOR_BATCH_WAIT_MS: '4000', FACILITATOR_BATCH_IDLE: 'wait', FACILITATOR_RELAYER_COUNT: '1' } });
  // The same token (storage layout, domain, address), with USDC's order of signature checks.
  await rpcCall(app.ctx.chain.rpcUrl, 'anvil_setCode', [app.ctx.chain.asset.address, compiled.USDG!.deployedBytecode]);
});
afterAll(async () => {
  reportTally('delegated-payer');
  await rpcCall(app.ctx.chain.rpcUrl, 'evm_setAutomine', [true]).catch(() => undefined);
  await app?.close();
});

const client = () => app.ctx.chain.publicClient;
const wallet = (account: ReturnType<typeof privateKeyToAccount>) => createWalletClient({ account, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Deploys the delegate the attacker points its account at: an EIP-1271 check that burns all the gas it is given. */
async function burnerDelegate(): Promise<Address> {
  const deployer = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(deployer.address);
  const hash = await wallet(deployer).deployContract({
    abi: [{ type: 'constructor', stateMutability: 'nonpayable', inputs: [{ name: 'burn', type: 'uint256' }] }],
    bytecode: compiled.GasBurningWallet!.bytecode as Hex,
    args: [1_000_000_000n],
  });
  return (await client().waitForTransactionReceipt({ hash })).contractAddress!;
}

/** Waits until the relayer has a transaction in the mempool (the devchain is not mining); returns its hash. */
async function relayerPending(): Promise<Hash> {
  const relayer = app.ctx.chain.relayers[0]!.address.toLowerCase();
  for (let i = 0; i < 200; i += 1) {
    const pool = (await rpcCall(app.ctx.chain.rpcUrl, 'txpool_content', [])) as { pending: Record<string, Record<string, { hash: Hash }>> };
    const ours = Object.entries(pool.pending).find(([from]) => from.toLowerCase() === relayer)?.[1];
    if (ours) return Object.values(ours)[0]!.hash;
    await sleep(50);
  }
  throw new Error('the relayer sent nothing');
}

describe('a payer that delegates its account (EIP-7702) in the block that carries our batch', () => {
  it("burns the batch's gas once; the honest payments in it are sent again alone and paid, once each; the attacker's is refused", async () => {
    const attacker = await fundedPayer(app, '1');
    const honest = await Promise.all(Array.from({ length: 4 }, () => fundedPayer(app, '1')));
    const sponsor = privateKeyToAccount(generatePrivateKey());
    await app.ctx.chain.devchain!.fundGas(sponsor.address);
    const delegate = await burnerDelegate();
    const requirements = requirementsFor(app, '1000');
    const attack = await signAuthorization(attacker, requirements);
    const payments = await Promise.all(honest.map((payer) => signAuthorization(payer, requirements)));
    const relayer = app.ctx.chain.relayers[0]!.address;
    const sentBefore = await client().getTransactionCount({ address: relayer });
    const attackKey = { network: requirements.network, asset: requirements.asset, payer: attacker.address, nonce: nonceOf(attack) };

    const rpc = app.ctx.chain.rpcUrl;
    await rpcCall(rpc, 'evm_setAutomine', [false]);
    let settles: Array<Promise<SettleResponse>>;
    let batch: Hash;
    let delegation: Hash;
    try {
      // The attacker's settle first (its claim written), so its call runs first in the batch; all five pass the code check (no code yet).
      settles = [app.ctx.facilitator!.settle(attack, requirements)];
      await expect.poll(() => app.ctx.facilitator!.ledger.find(attackKey)).toBeTruthy();
      settles.push(...payments.map((payment) => app.ctx.facilitator!.settle(payment, requirements)));
      batch = await relayerPending();
      // Then the delegation, outbidding the batch's fee: the block runs it first.
      const authorization = await wallet(sponsor).signAuthorization({ account: attacker, contractAddress: delegate });
      delegation = await wallet(sponsor).sendTransaction({ authorizationList: [authorization], to: attacker.address, data: '0x', gas: 100_000n, maxFeePerGas: parseGwei('500'), maxPriorityFeePerGas: parseGwei('100') });
      await rpcCall(rpc, 'evm_mine', []);
    } finally {
      await rpcCall(rpc, 'evm_setAutomine', [true]);
    }
    const [attacked, ...answers] = await Promise.all(settles);
    tally.attacks += 1;

    // The race happened: one block, the delegation first, the batch after it.
    const [delegated, batched] = await Promise.all([client().getTransactionReceipt({ hash: delegation }), client().getTransactionReceipt({ hash: batch })]);
    expect(delegated.blockNumber).toBe(batched.blockNumber);
    expect(delegated.transactionIndex).toBeLessThan(batched.transactionIndex);
    expect(getAddress(batched.to!)).toBe(MULTICALL3_ADDRESS);
    expect(await client().getCode({ address: attacker.address })).toMatch(/^0xef0100/i);
    // What the attack cost us: the batch's gas limit (the sum of its five calls' ceilings), nearly all of it burned.
    const { gas: batchLimit } = await client().getTransaction({ hash: batch });
    expect(batched.gasUsed * 10n).toBeGreaterThan(batchLimit * 9n);

    // Each honest payment is paid once; those the burn starved (every call after the attacker's), by a transaction of their own.
    const resent = answers.filter((answer) => answer.transaction !== batch);
    expect(resent.length, 'honest payments starved in the batch').toBeGreaterThan(0);
    // The batch paid only calls placed before the attacker's (none, as its claim went first): two token logs each.
    expect(batched.logs.filter((log) => getAddress(log.address) === getAddress(app.ctx.chain.asset.address))).toHaveLength(2 * (answers.length - resent.length));
    for (const [i, answer] of answers.entries()) {
      expect(answer, `honest payment ${i}`).toMatchObject({ success: true });
      expect(await transfersForNonce(app, honest[i]!.address, nonceOf(payments[i]!))).toBe(1);
    }
    for (const answer of resent) {
      const sent = await client().getTransaction({ hash: answer.transaction as Hash });
      expect(getAddress(sent.to!)).toBe(getAddress(app.ctx.chain.asset.address));
      expect(sent.gas * 5n).toBeLessThan(batchLimit); // one call's ceiling, not the batch's
    }
    expect(await balanceOf(app, requirements.payTo as Address)).toBe(4n * 1000n);

    // The attacker's is refused for its code, moved nothing, and is never sent again: the batch and one lone send per starved payment.
    expect(attacked).toMatchObject({ success: false, errorReason: 'payer_has_code', transaction: batch });
    expect(await transfersForNonce(app, attacker.address, nonceOf(attack))).toBe(0);
    expect(await client().getTransactionCount({ address: relayer })).toBe(sentBefore + 1 + resent.length);
    expect(await app.ctx.facilitator!.ledger.find(attackKey)).toMatchObject({ status: 'failed', errorReason: 'payer_has_code' });
    // A retry of the attacker's settle answers the same and sends nothing.
    expect(await app.ctx.facilitator!.settle(attack, requirements)).toMatchObject({ success: false });
    expect(await client().getTransactionCount({ address: relayer })).toBe(sentBefore + 1 + resent.length);
  });
});
