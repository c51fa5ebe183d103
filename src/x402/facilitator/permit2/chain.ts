// What the chain says about one Permit2 payment, judged like every payment here: by the transfer paired with the
// payment's own settlement event, never by a transaction's success alone.
//
// The pair: the x402 proxy emits `Settled()` (or `SettledWithPermit()`) right after Permit2 has pulled the tokens,
// so the proxy's event and the token's `Transfer(payer → payTo, amount)` are adjacent logs of one call. Neither
// names the permit's nonce, so a transaction proves a given permit only when it is a direct call of the proxy
// whose calldata carries that permit (one settle per transaction: the pair is unambiguous) — which is how this
// facilitator sends every Permit2 settlement (alone, never batched). A permit executed any other way (inside
// someone's batch, through another contract) cannot be told from the payer's other permits to the same payee
// by its logs: it is never counted as paying, and the row fails once its deadline has passed.
//
// Permit2 reverts on a used nonce (no USDG-like silent success), and its nonces are unordered bits:
// `nonceBitmap(owner, nonce >> 8)` bit `nonce & 255`. A cancellation is `UnorderedNonceInvalidation`.
import { x402ExactPermit2ProxyABI, x402UptoPermit2ProxyABI } from '@x402/evm';
import {
  decodeFunctionData,
  getAddress,
  isAddressEqual,
  parseAbi,
  parseEventLogs,
  type Address,
  type Hash,
  type Log,
  type PublicClient,
  type Transaction,
} from 'viem';
import type { BlockClock } from '../../../chain/block-clock.js';
import { PERMIT2_ADDRESS } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { isKnownTransaction, maybeReceipt, type ChainVerdict } from '../chain-verdict.js';
import type { ReceiptVerdict } from '../receipt.js';
import { Reason } from '../reasons.js';
import { proxyOf, type Permit2Kind } from './payment.js';

const permit2Abi = parseAbi([
  'function nonceBitmap(address owner, uint256 wordPos) view returns (uint256)',
  'event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask)',
]);
const proxyEvents = parseAbi(['event Settled()', 'event SettledWithPermit()']);
const transferEvent = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)']);

/** Reason for a permit whose nonce is spent (by a settle already answered, or by something else). */
export const PERMIT2_NONCE_USED = 'permit2_invalid_nonce';

export interface ExpectedPermit2 {
  kind: Permit2Kind;
  token: string;
  payer: string;
  payTo: string;
  amount: string;
}

/** The row's own terms. */
export const expectedOf = (row: SettlementRow): ExpectedPermit2 => ({ kind: row.kind as Permit2Kind, token: row.token!, payer: row.payer, payTo: row.payTo, amount: row.amount });

/**
 * Judges a mined transaction of the proxy by the Transfer adjacent to (right before) the proxy's settlement event.
 * `logIndex` is that Transfer's: what the one success claims in chain_payment_uses.
 */
export function judgePermit2Receipt(receipt: { status: string; logs: readonly Log[] }, expected: ExpectedPermit2): ReceiptVerdict {
  if (receipt.status !== 'success') return { ok: false, reason: Reason.transactionFailed, message: 'settlement transaction reverted' };
  const proxy = proxyOf(expected.kind);
  const logs = receipt.logs.filter((l) => !l.removed).sort((a, b) => (a.logIndex ?? 0) - (b.logIndex ?? 0));
  for (let i = 1; i < logs.length; i++) {
    const [moved, settled] = [logs[i - 1]!, logs[i]!];
    if (!isAddressEqual(settled.address, proxy) || parseEventLogs({ abi: proxyEvents, logs: [settled] }).length !== 1) continue;
    if (moved.logIndex !== (settled.logIndex ?? -2) - 1 || !isAddressEqual(moved.address, expected.token as Address)) continue;
    const [transfer] = parseEventLogs({ abi: transferEvent, logs: [moved] });
    if (!transfer || !isAddressEqual(transfer.args.from, expected.payer as Address)) continue;
    if (isAddressEqual(transfer.args.to, expected.payTo as Address) && transfer.args.value === BigInt(expected.amount)) return { ok: true, logIndex: moved.logIndex! };
    return { ok: false, reason: PERMIT2_NONCE_USED, message: `the permit moved ${transfer.args.value} to ${transfer.args.to}, not this payment` };
  }
  return { ok: false, reason: Reason.transferEventMismatch, message: "no Transfer paired with the proxy's settlement event in the receipt" };
}

/** Whether `tx` is a direct proxy call executing exactly this permit (owner and nonce from its calldata). */
export function executesPermit(tx: Pick<Transaction, 'to' | 'input'>, kind: Permit2Kind, payer: string, nonce: bigint): boolean {
  if (!tx.to || !isAddressEqual(tx.to, proxyOf(kind))) return false;
  try {
    const abi = kind === 'permit2-upto' ? x402UptoPermit2ProxyABI : x402ExactPermit2ProxyABI;
    const { functionName, args } = decodeFunctionData({ abi, data: tx.input });
    if (functionName !== 'settle' && functionName !== 'settleWithPermit') return false;
    const rest = (functionName === 'settleWithPermit' ? args.slice(1) : args) as unknown[];
    const permit = rest[0] as { nonce: bigint };
    const owner = (kind === 'permit2-upto' ? rest[2] : rest[1]) as Address;
    return permit.nonce === nonce && isAddressEqual(owner, payer as Address);
  } catch {
    return false;
  }
}

/** The nonce's bit at `blockNumber`. */
export async function permit2NonceUsed(client: PublicClient, payer: string, nonce: bigint, blockNumber?: bigint): Promise<boolean> {
  const word = await client.readContract({ address: PERMIT2_ADDRESS, abi: permit2Abi, functionName: 'nonceBitmap', args: [payer as Address, nonce >> 8n], blockNumber });
  return ((word >> (nonce & 255n)) & 1n) === 1n;
}

/**
 * Decides an open Permit2 row from the chain alone (pinned to one block, its time deciding the deadline), as
 * chainVerdict does for EIP-3009 rows: the recorded transaction's receipt first, then the nonce's state and the
 * transaction that spent it.
 */
export async function permit2Verdict(client: PublicClient, row: SettlementRow, catchUp?: BlockClock): Promise<ChainVerdict> {
  const expected = expectedOf(row);
  const nonce = BigInt(row.nonce);
  const deadline = BigInt(row.validBefore);
  let ownFailure: ChainVerdict | null = null;
  if (row.txHash) {
    const receipt = await maybeReceipt(client, row.txHash as Hash);
    if (receipt) {
      const verdict = judgePermit2Receipt(receipt, expected);
      if (verdict.ok) return { kind: 'settled', txHash: row.txHash as Hash, logIndex: verdict.logIndex };
      ownFailure = { kind: 'failed', reason: verdict.reason, message: verdict.message, txHash: row.txHash as Hash };
    } else if (await isKnownTransaction(client, row.txHash as Hash)) {
      return { kind: 'pending' };
    }
  }
  let block = await client.getBlock({ blockTag: 'latest' });
  let used = await permit2NonceUsed(client, row.payer, nonce, block.number);
  // Permit2 refuses a permit once block.timestamp > deadline; the devchain mines on demand, so bring it to now first.
  if (!used && catchUp && block.timestamp <= deadline && BigInt(Math.floor(Date.now() / 1000)) > deadline) {
    await catchUp();
    block = await client.getBlock({ blockTag: 'latest' });
    used = await permit2NonceUsed(client, row.payer, nonce, block.number);
  }
  if (used) {
    const paid = await findExecution(client, row, expected, nonce, block.number);
    if (paid) return paid;
    if (await canceled(client, row, nonce, block.number)) {
      return ownFailure ?? { kind: 'failed', reason: PERMIT2_NONCE_USED, message: "the permit's nonce was invalidated by its payer; nothing moved", txHash: null };
    }
    // Spent by something that did not pay this (another permit of the payer with this nonce, or a call we cannot
    // attribute). A log backend lagging behind the state could hide the paying transaction for a while: decided
    // only once the deadline has passed, when no execution of this permit can still be mined.
    if (block.timestamp <= deadline) return { kind: 'pending' };
    return ownFailure ?? { kind: 'failed', reason: PERMIT2_NONCE_USED, message: "the permit's nonce was spent by a transaction that did not pay this; nothing moved for it", txHash: null };
  }
  if (ownFailure) return ownFailure;
  if (block.timestamp > deadline) {
    return { kind: 'failed', reason: 'permit2_deadline_expired', message: 'the permit expired without being used; nothing moved', txHash: (row.txHash as Hash | null) ?? null };
  }
  return { kind: 'pending' };
}

/** The direct proxy call that executed this permit and paid exactly these terms, among the payer's transfers to payTo. */
async function findExecution(client: PublicClient, row: SettlementRow, expected: ExpectedPermit2, nonce: bigint, toBlock: bigint): Promise<ChainVerdict | null> {
  const transfers = await client.getLogs({
    address: getAddress(expected.token),
    event: transferEvent[0],
    args: { from: expected.payer as Address, to: expected.payTo as Address },
    fromBlock: BigInt(row.fromBlock),
    toBlock,
  });
  const hashes = [...new Set(transfers.filter((l) => !l.removed && l.args.value === BigInt(expected.amount)).map((l) => l.transactionHash))];
  for (const hash of hashes) {
    const [tx, receipt] = await Promise.all([client.getTransaction({ hash }), client.getTransactionReceipt({ hash })]);
    const verdict = judgePermit2Receipt(receipt, expected);
    if (!verdict.ok) continue;
    // A call through a wrapper (Multicall3, a front-runner's contract) names no permit in the transaction's own
    // calldata: the nonce's bit decides, spent in that transaction's block and not before it. The proxy's paired
    // event and Transfer are in its receipt; one transfer still buys one success (chain_payment_uses).
    if (executesPermit(tx, expected.kind, expected.payer, nonce) || (await spentInBlock(client, expected.payer, nonce, receipt.blockNumber))) {
      return { kind: 'settled', txHash: hash, logIndex: verdict.logIndex };
    }
  }
  return null;
}

async function spentInBlock(client: PublicClient, payer: string, nonce: bigint, blockNumber: bigint): Promise<boolean> {
  const [after, before] = await Promise.all([permit2NonceUsed(client, payer, nonce, blockNumber), permit2NonceUsed(client, payer, nonce, blockNumber - 1n)]);
  return after && !before;
}

async function canceled(client: PublicClient, row: SettlementRow, nonce: bigint, toBlock: bigint): Promise<boolean> {
  const logs = await client.getLogs({ address: PERMIT2_ADDRESS, event: permit2Abi[1], args: { owner: row.payer as Address }, fromBlock: BigInt(row.fromBlock), toBlock });
  return logs.some((l) => !l.removed && l.args.word === nonce >> 8n && ((l.args.mask! >> (nonce & 255n)) & 1n) === 1n);
}
