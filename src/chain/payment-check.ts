// What the chain says about one EIP-3009 payment (an upload order's, a relayed credential's). A
// transaction counts for it only when its receipt carries that very authorization being used
// (AuthorizationUsed of payer + nonce, from the token) AND the token moving the expected amount from the
// payer to the payee, at the configured finality depth. A success status alone proves nothing (USDG's
// reused nonce succeeds and moves nothing), and any other transfer, however similar, is unrelated.
import { getAddress, isAddressEqual, parseAbiItem, parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { getBlock, getBlockNumber, getLogs, getTransactionReceipt, readContract } from 'viem/actions';
import { eip3009Abi } from './eip3009.js';

const authorizationUsed = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

export interface ExpectedPayment {
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: string;
}

export type ReceiptVerdict = { kind: 'confirmed' } | { kind: 'unconfirmed'; message: string };

/** The transaction `hash` as a payment of `expected`, at `confirmations` blocks of depth. */
export async function checkPaymentTransaction(client: PublicClient, hash: Hex, expected: ExpectedPayment, confirmations: number): Promise<ReceiptVerdict> {
  const receipt = await getTransactionReceipt(client, { hash }).catch(() => null);
  if (!receipt) return { kind: 'unconfirmed', message: 'The transaction is not mined (or not known to this chain) yet' };
  if (receipt.status !== 'success') return { kind: 'unconfirmed', message: 'The transaction reverted: it moved nothing' };
  if (!paysOrder(receipt, expected)) {
    return { kind: 'unconfirmed', message: "The transaction does not use this order's payment authorization to pay its amount to its recipient" };
  }
  const depth = (await getBlockNumber(client, { cacheTime: 0 })) - receipt.blockNumber;
  if (depth < BigInt(confirmations)) return { kind: 'unconfirmed', message: `The transaction has ${depth} of ${confirmations} confirmations; try again shortly` };
  return { kind: 'confirmed' };
}

function paysOrder(receipt: TransactionReceipt, expected: ExpectedPayment): boolean {
  const asset = getAddress(expected.asset);
  const logs = parseEventLogs({ abi: eip3009Abi, logs: receipt.logs.filter((log) => isAddressEqual(log.address, asset)) });
  const used = logs.some(
    (log) => log.eventName === 'AuthorizationUsed' && isAddressEqual(log.args.authorizer, expected.payer as Address) && log.args.nonce.toLowerCase() === expected.nonce.toLowerCase(),
  );
  const moved = logs.some(
    (log) =>
      log.eventName === 'Transfer' &&
      isAddressEqual(log.args.from, expected.payer as Address) &&
      isAddressEqual(log.args.to, expected.payTo as Address) &&
      log.args.value === BigInt(expected.amount),
  );
  return used && moved;
}

/**
 * For the reconciler: the transaction that used this authorization, if any within the last
 * `lookbackBlocks`, and whether it can still be used at all (unused and past validBefore: never).
 */
export async function authorizationOnChain(client: PublicClient, expected: ExpectedPayment, validBefore: bigint, lookbackBlocks: bigint) {
  const asset = getAddress(expected.asset);
  // Block first: anything mined after it cannot pass an already-passed validBefore.
  const block = await getBlock(client, { blockTag: 'latest' });
  const used = await readContract(client, {
    address: asset,
    abi: eip3009Abi,
    functionName: 'authorizationState',
    args: [expected.payer as Address, expected.nonce as Hex],
    blockNumber: block.number,
  });
  if (!used) return { used: false as const, dead: block.timestamp >= validBefore };
  const fromBlock = block.number > lookbackBlocks ? block.number - lookbackBlocks : 0n;
  const logs = await getLogs(client, {
    address: asset,
    event: authorizationUsed,
    args: { authorizer: expected.payer as Address, nonce: expected.nonce as Hex },
    fromBlock,
    toBlock: block.number,
  });
  return { used: true as const, transactionHash: logs[0]?.transactionHash ?? null };
}

/**
 * For reconcilers of payments left unsettled: what became of one authorization. `paid`: a transaction used it
 * to pay exactly `expected`, at `confirmations` depth. `dead`: unused past validBefore, so it can never move
 * money. `open`: not decided yet (unused but still valid, not deep enough), or used by a transaction that
 * did not pay `expected` (left for an operator).
 */
export type AuthorizationOutcome = { kind: 'paid'; transactionHash: Hex } | { kind: 'dead' } | { kind: 'open' };

export async function authorizationOutcome(client: PublicClient, expected: ExpectedPayment, validBefore: bigint, lookbackBlocks: bigint, confirmations: number): Promise<AuthorizationOutcome> {
  const state = await authorizationOnChain(client, expected, validBefore, lookbackBlocks);
  if (!state.used) return state.dead ? { kind: 'dead' } : { kind: 'open' };
  if (!state.transactionHash) return { kind: 'open' };
  const verdict = await checkPaymentTransaction(client, state.transactionHash, expected, confirmations);
  return verdict.kind === 'confirmed' ? { kind: 'paid', transactionHash: state.transactionHash } : { kind: 'open' };
}
