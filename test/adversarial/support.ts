// The attackers' tools: a payer who controls its own key and sends its own transactions (Multicall3
// bursts that spend several authorizations at once), and the ledger check every attack ends with:
// the services a path granted never outnumber the transfers that paid for them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PaymentPayload } from '@x402/core/types';
import { createWalletClient, encodeFunctionData, http, parseAbi, parseGwei, parseSignature, type Hex, type TransactionReceipt } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { PrivateKeyAccount } from 'viem/accounts';
import { eip3009Abi } from '../../src/chain/eip3009.js';
import { MULTICALL3_ADDRESS } from '../../src/chain/multicall3.js';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';

const multicallAbi = parseAbi(['function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[])']);

/** The token call that executes one signed authorization (anyone may send it). */
export function transferCallOf(app: TestApp, payload: PaymentPayload): Hex {
  const { authorization: a, signature } = payload.payload as { authorization: Record<string, string>; signature: Hex };
  const { v, r, s } = parseSignature(signature);
  return encodeFunctionData({
    abi: eip3009Abi,
    functionName: 'transferWithAuthorization',
    args: [a.from as Hex, a.to as Hex, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce as Hex, Number(v), r, s],
  });
}

/** One transaction from `sender` that executes every payload in order, through Multicall3's aggregate3. */
export async function executeTogether(app: TestApp, sender: PrivateKeyAccount, payloads: PaymentPayload[]): Promise<TransactionReceipt> {
  const wallet = createWalletClient({ account: sender, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  const calls = payloads.map((payload) => ({ target: app.ctx.chain.asset.address, allowFailure: false, callData: transferCallOf(app, payload) }));
  const hash = await wallet.writeContract({ address: MULTICALL3_ADDRESS, abi: multicallAbi, functionName: 'aggregate3', args: [calls], gas: 300_000n + 120_000n * BigInt(calls.length) });
  const receipt = await app.ctx.chain.publicClient.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success') throw new Error(`the attacker's batch reverted: ${hash}`);
  return receipt;
}

/** A mempool reader sends the payer's authorization itself, outbidding our relayer's fee; returns the hash at once. */
export async function outbid(app: TestApp, payload: PaymentPayload): Promise<Hex> {
  const reader = privateKeyToAccount(generatePrivateKey());
  await app.ctx.chain.devchain!.fundGas(reader.address);
  const wallet = createWalletClient({ account: reader, chain: app.ctx.chain.viemChain, transport: http(app.ctx.chain.rpcUrl) });
  return wallet.sendTransaction({ to: app.ctx.chain.asset.address, data: transferCallOf(app, payload), gas: 200_000n, maxFeePerGas: parseGwei('500'), maxPriorityFeePerGas: parseGwei('100') });
}

/** Transfer logs of the token to `payTo`: what the seller was really paid. */
export async function paymentsTo(app: TestApp, payTo: Hex): Promise<{ transactionHash: Hex; value: bigint }[]> {
  const logs = await app.ctx.chain.publicClient.getContractEvents({
    address: app.ctx.chain.asset.address,
    abi: eip3009Abi,
    eventName: 'Transfer',
    args: { to: payTo },
    fromBlock: 0n,
  });
  return logs.map((log) => ({ transactionHash: log.transactionHash, value: log.args.value! }));
}

/** Attacks tried and services granted beyond what was paid, per run: .ci/run prints them (TOLLGATE_SUITE_REPORTS). */
export const tally = { attacks: 0, extraServices: 0 };

/**
 * The check every attack ends with: the services it bought never outnumber the transfers that paid for them.
 * Counted (for CI's summary) before it is asserted, so a failing run reports what it found.
 */
export function checkLedger(services: number, paidTransfers: number): void {
  tally.attacks += 1;
  tally.extraServices += Math.max(0, services - paidTransfers);
  expect(services, 'services granted beyond the transfers that paid for them').toBeLessThanOrEqual(paidTransfers);
}

/** The gas attackers' cost to the relayer: attacks whose spend went past the ceiling, sends for payers we refused. */
export const gasTally = { attacks: 0, overCeiling: 0, refusedSends: 0 };

/** Writes this file's tally where .ci/run collects suite counts (one file per test file and database). */
export function reportTally(file: string): void {
  const dir = process.env.TOLLGATE_SUITE_REPORTS;
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  const database = process.env.DATABASE_URL ? 'postgres' : 'pglite';
  writeFileSync(
    join(dir, `adversarial-${file}-${database}.json`),
    JSON.stringify({
      suite: `adversarial ${file}`,
      database,
      'attacks tried': tally.attacks + gasTally.attacks,
      'extra services': tally.extraServices,
      'gas attacks over the ceiling': gasTally.overCeiling,
      'sends for refused payers': gasTally.refusedSends,
    }),
  );
}
