// What the chain says about one EIP-3009 payment: the one judgment every path that accepts a
// chain-confirmed payment uses (the facilitator, intents, uploads, top-ups, charges, the relay, pay-and-call).
// A transaction pays `expected` only when the Transfer paired with this authorization's own
// AuthorizationUsed log (see pairPaymentLogs) moves exactly its amount from the payer to the payee. A
// success status alone proves nothing (USDG's reused nonce succeeds and moves nothing), and any other
// transfer in the transaction, however similar, paid for something else.
import { getAddress, isAddressEqual, parseAbiItem, parseEventLogs, TransactionReceiptNotFoundError, type Address, type Hex, type Log, type PublicClient } from 'viem';
import { getBlock, getBlockNumber, getLogs, getTransactionReceipt, readContract } from 'viem/actions';
import { eip3009Abi } from './eip3009.js';
import { pairPaymentLogs, type PairedPayment } from './indexer/pair-logs.js';
import type { PaymentUse } from './payment-uses.js';

const authorizationUsed = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

export interface ExpectedPayment {
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: string;
}

export type PaymentJudgment =
  /** The authorization's own transfer moved exactly the expected payment; `logIndex` is that Transfer's. */
  | { kind: 'paid'; logIndex: number }
  | { kind: 'reverted' }
  /** USDG's quirk: the nonce was already used, the call moved nothing. */
  | { kind: 'already_used' }
  /** The authorization was used here, and its own transfer moved something else. */
  | { kind: 'mismatch'; recipient: Address; value: bigint }
  /** The transaction does not use this authorization. */
  | { kind: 'absent' };

/** Judges one mined transaction as a payment of `expected`. */
export function judgePayment(receipt: { status: string; logs: readonly Log[] }, expected: ExpectedPayment): PaymentJudgment {
  if (receipt.status !== 'success') return { kind: 'reverted' };
  const asset = getAddress(expected.asset);
  const payer = getAddress(expected.payer);
  const nonce = expected.nonce.toLowerCase();
  const own = pairedOnce(receipt.logs, asset).find((p) => p.payer === payer && p.nonce === nonce);
  if (own) {
    const exact = isAddressEqual(own.recipient, expected.payTo as Address) && own.value === BigInt(expected.amount);
    return exact ? { kind: 'paid', logIndex: own.logIndex } : { kind: 'mismatch', recipient: own.recipient, value: own.value };
  }
  const replayed = parseEventLogs({ abi: eip3009Abi, logs: receipt.logs.filter((l) => isAddressEqual(l.address, asset)) as Log[], eventName: 'AuthorizationAlreadyUsed' });
  if (replayed.some((l) => isAddressEqual(l.args.authorizer, payer) && l.args.nonce.toLowerCase() === nonce)) return { kind: 'already_used' };
  return { kind: 'absent' };
}

// A settlement batch's receipt is judged once per payment in it, by the same logs: pair them once.
const pairedByLogs = new WeakMap<readonly Log[], Map<Address, PairedPayment[]>>();
function pairedOnce(logs: readonly Log[], asset: Address): PairedPayment[] {
  let byAsset = pairedByLogs.get(logs);
  if (!byAsset) pairedByLogs.set(logs, (byAsset = new Map()));
  let pairs = byAsset.get(asset);
  if (!pairs) byAsset.set(asset, (pairs = pairPaymentLogs(logs, new Set([asset.toLowerCase()]))));
  return pairs;
}

/** The claim row of a judged payment (see PaymentUses). */
export function paymentUseOf(network: string, expected: ExpectedPayment, transactionHash: string, logIndex: number): PaymentUse {
  return { network, transactionHash, logIndex, ...expected };
}

export type ReceiptVerdict = { kind: 'confirmed'; logIndex: number } | { kind: 'unconfirmed'; message: string };

export async function checkPaymentTransaction(client: PublicClient, hash: Hex, expected: ExpectedPayment, confirmations: number): Promise<ReceiptVerdict> {
  const receipt = await getTransactionReceipt(client, { hash }).catch(() => null);
  if (!receipt) return { kind: 'unconfirmed', message: 'The transaction is not mined (or not known to this chain) yet' };
  const judgment = judgePayment(receipt, expected);
  if (judgment.kind === 'reverted') return { kind: 'unconfirmed', message: 'The transaction reverted: it moved nothing' };
  if (judgment.kind !== 'paid') {
    return { kind: 'unconfirmed', message: "The transaction does not use this payment's authorization to pay its amount to its recipient" };
  }
  const depth = (await getBlockNumber(client, { cacheTime: 0 })) - receipt.blockNumber;
  if (depth < BigInt(confirmations)) return { kind: 'unconfirmed', message: `The transaction has ${depth} of ${confirmations} confirmations; try again shortly` };
  return { kind: 'confirmed', logIndex: judgment.logIndex };
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
  return { used: true as const, transactionHash: logs.find((log) => !log.removed)?.transactionHash ?? null };
}

/**
 * For reconcilers of payments left unsettled: what became of one authorization, at `confirmations` depth.
 * `paid`: a transaction used it to pay exactly `expected` (its Transfer is `logIndex`). `spent`: it was used by
 * a transaction that paid something else, so it can never pay `expected`. `dead`: unused past validBefore, so
 * it can never move money. `open`: not decided yet (unused but still valid, or not deep enough).
 */
export type AuthorizationOutcome =
  | { kind: 'paid'; transactionHash: Hex; logIndex: number; blockNumber: bigint }
  | { kind: 'spent'; transactionHash: Hex }
  | { kind: 'dead' }
  /** `used`: the token marks it used, but its transaction is not found or not deep enough yet. */
  | { kind: 'open'; used: boolean };

export async function authorizationOutcome(client: PublicClient, expected: ExpectedPayment, validBefore: bigint, lookbackBlocks: bigint, confirmations: number): Promise<AuthorizationOutcome> {
  const state = await authorizationOnChain(client, expected, validBefore, lookbackBlocks);
  if (!state.used) return state.dead ? { kind: 'dead' } : { kind: 'open', used: false };
  if (!state.transactionHash) return { kind: 'open', used: true };
  // A node behind the one that served the log (a load-balanced RPC) may not have the receipt yet.
  const receipt = await getTransactionReceipt(client, { hash: state.transactionHash }).catch((error: unknown) => {
    if (error instanceof TransactionReceiptNotFoundError) return null;
    throw error;
  });
  if (!receipt) return { kind: 'open', used: true };
  const depth = (await getBlockNumber(client, { cacheTime: 0 })) - receipt.blockNumber;
  if (depth < BigInt(confirmations)) return { kind: 'open', used: true };
  const judgment = judgePayment(receipt, expected);
  return judgment.kind === 'paid'
    ? { kind: 'paid', transactionHash: state.transactionHash, logIndex: judgment.logIndex, blockNumber: receipt.blockNumber }
    : { kind: 'spent', transactionHash: state.transactionHash };
}
