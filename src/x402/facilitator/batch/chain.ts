// What the chain says about batch-settlement operations, judged like every payment here: by the operation's own
// event in the receipt, never by a transaction's success alone. A replayed claim succeeds on chain and does
// nothing (x402BatchSettlement skips a voucher whose cumulative total is not above the channel's), so a claim pays
// only where the receipt carries `Claimed(channelId, …, newTotalClaimed)` for exactly the total it claimed; a sweep
// only where it carries `Settled(receiver, token, …, amount)`; a refund only where it carries `Refunded(channelId)`.
// (A deposit is an ERC-3009 authorization: judged by its AuthorizationUsed + Transfer pair, chain-verdict.ts.)
import { BlockNotFoundError, decodeFunctionData, formatLog, isAddressEqual, parseAbi, parseEventLogs, toHex, type Address, type Hash, type Hex, type Log, type PublicClient, type RpcTransactionReceipt } from 'viem';
import { BATCH_SETTLEMENT } from '../../../chain/x402-contracts.js';
import type { SettlementRow } from '../../tables.js';
import { isKnownTransaction, maybeReceipt, type ChainVerdict } from '../chain-verdict.js';
import type { ReceiptVerdict } from '../receipt.js';
import { Reason } from '../reasons.js';
import { channelIdOf, type ChannelConfig } from './payload.js';

export const batchAbi = parseAbi([
  'struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }',
  'struct Voucher { ChannelConfig channel; uint128 maxClaimableAmount; }',
  'struct VoucherClaim { Voucher voucher; bytes signature; uint128 totalClaimed; }',
  'function deposit(ChannelConfig config, uint128 amount, address collector, bytes collectorData)',
  'function claimWithSignature(VoucherClaim[] voucherClaims, bytes authorizerSignature)',
  'function settle(address receiver, address token)',
  'function refundWithSignature(ChannelConfig config, uint128 amount, uint256 nonce, bytes receiverAuthorizerSignature)',
  'function multicall(bytes[] data) returns (bytes[] results)',
  'function channels(bytes32 channelId) view returns (uint128 balance, uint128 totalClaimed)',
  'function pendingWithdrawals(bytes32 channelId) view returns (uint128 amount, uint40 initiatedAt)',
  'function refundNonce(bytes32 channelId) view returns (uint256)',
  'function receivers(address receiver, address token) view returns (uint128 totalClaimed, uint128 totalSettled)',
  'event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed)',
  'event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount)',
  'event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount)',
]);

const claimedEvent = batchAbi.find((e) => e.type === 'event' && e.name === 'Claimed') as Extract<(typeof batchAbi)[number], { name: 'Claimed' }>;
const refundedEvent = batchAbi.find((e) => e.type === 'event' && e.name === 'Refunded') as Extract<(typeof batchAbi)[number], { name: 'Refunded' }>;

type ClaimedLog = Pick<Log, 'removed' | 'transactionHash' | 'logIndex'> & { args: { newTotalClaimed?: bigint } };

export interface ChannelState {
  balance: bigint;
  totalClaimed: bigint;
  /** Pending timed withdrawal: its amount and start (0 when none). */
  withdrawAmount: bigint;
  withdrawRequestedAt: number;
  refundNonce: bigint;
}

/** One of the contract's per-channel views, at one block (latest when none is named). */
const readAt = <T>(client: PublicClient, functionName: 'channels' | 'pendingWithdrawals' | 'refundNonce', channelId: Hex, blockNumber?: bigint) =>
  client.readContract({ address: BATCH_SETTLEMENT, abi: batchAbi, functionName, args: [channelId], blockNumber }) as Promise<T>;

/** The channel as the contract holds it, at one block. */
export async function readChannel(client: PublicClient, channelId: Hex, blockNumber?: bigint): Promise<ChannelState> {
  const [[balance, totalClaimed], [withdrawAmount, initiatedAt], refundNonce] = await Promise.all([
    readAt<readonly [bigint, bigint]>(client, 'channels', channelId, blockNumber),
    readAt<readonly [bigint, number]>(client, 'pendingWithdrawals', channelId, blockNumber),
    readAt<bigint>(client, 'refundNonce', channelId, blockNumber),
  ]);
  return { balance, totalClaimed, withdrawAmount, withdrawRequestedAt: Number(initiatedAt), refundNonce };
}

/** The x402 snapshot of a channel (the shape /verify's extra and a settle's extra.channelState carry). */
export const snapshotOf = (channelId: Hex, s: ChannelState) => ({
  channelId,
  balance: s.balance.toString(),
  totalClaimed: s.totalClaimed.toString(),
  withdrawRequestedAt: s.withdrawRequestedAt,
  refundNonce: s.refundNonce.toString(),
});

const own = (logs: readonly Log[]) => logs.filter((l) => !l.removed && isAddressEqual(l.address, BATCH_SETTLEMENT));

/** This increment's `Claimed` in the receipt: the channel reaching exactly `totalClaimed`. */
export function judgeClaimReceipt(receipt: { status: string; logs: readonly Log[] }, channelId: Hex, totalClaimed: bigint): ReceiptVerdict {
  if (receipt.status !== 'success') return { ok: false, reason: 'invalid_batch_settlement_evm_claim_transaction_failed', message: 'the claim transaction reverted' };
  const claimed = parseEventLogs({ abi: batchAbi, eventName: 'Claimed', logs: own(receipt.logs) as Log[] }).find((l) => l.args.channelId.toLowerCase() === channelId.toLowerCase());
  if (claimed && claimed.args.newTotalClaimed === totalClaimed) return { ok: true, logIndex: claimed.logIndex };
  return { ok: false, reason: 'invalid_batch_settlement_evm_cumulative_below_claimed', message: 'the transaction claimed nothing for this voucher (the channel had claimed as much or more)' };
}

/** The sweep's `Settled(receiver, token)` and the amount it moved; null when it moved nothing. */
export function sweptBy(receipt: { status: string; logs: readonly Log[] }, receiver: Address, token: Address): { amount: bigint; logIndex: number } | null {
  if (receipt.status !== 'success') return null;
  const settled = parseEventLogs({ abi: batchAbi, eventName: 'Settled', logs: own(receipt.logs) as Log[] }).find((l) => isAddressEqual(l.args.receiver, receiver) && isAddressEqual(l.args.token, token));
  return settled ? { amount: settled.args.amount, logIndex: settled.logIndex } : null;
}

/** The refund's `Refunded(channelId)` (a capped refund of 0 emits none: it moved nothing). */
export function judgeRefundReceipt(receipt: { status: string; logs: readonly Log[] }, channelId: Hex): ReceiptVerdict & { amount?: bigint } {
  if (receipt.status !== 'success') return { ok: false, reason: 'invalid_batch_settlement_evm_refund_transaction_failed', message: 'the refund transaction reverted' };
  const refunded = parseEventLogs({ abi: batchAbi, eventName: 'Refunded', logs: own(receipt.logs) as Log[] }).find((l) => l.args.channelId.toLowerCase() === channelId.toLowerCase());
  if (refunded) return { ok: true, logIndex: refunded.logIndex, amount: refunded.args.amount };
  return { ok: false, reason: 'invalid_batch_settlement_evm_refund_no_balance', message: 'the refund moved nothing (no unclaimed escrow was left)' };
}

/** The channel operation a claim or refund row stands for. */
export interface ChannelOperation {
  channelId: Hex;
  /** Claims: the cumulative total this increment reaches. */
  totalClaimed?: string;
  /** Refunds: the contract's refund nonce the signature is bound to. */
  refundNonce?: string;
}

/** Decides an open claim or refund row from the chain alone. */
export async function channelVerdict(client: PublicClient, row: SettlementRow): Promise<ChainVerdict> {
  const op = operationOf(row);
  const judge = (receipt: { status: string; logs: readonly Log[] }) =>
    row.kind === 'batch-claim' ? judgeClaimReceipt(receipt, op.channelId, BigInt(op.totalClaimed!)) : judgeRefundReceipt(receipt, op.channelId);
  if (row.txHash) {
    const receipt = await maybeReceipt(client, row.txHash as Hash);
    if (receipt) {
      const verdict = judge(receipt);
      return verdict.ok ? { kind: 'settled', txHash: row.txHash as Hash, logIndex: verdict.logIndex } : { kind: 'failed', reason: verdict.reason, message: verdict.message, txHash: row.txHash as Hash };
    }
    if (await isKnownTransaction(client, row.txHash as Hash)) return { kind: 'pending' };
  }
  const block = await client.getBlock({ blockTag: 'latest' });
  const state = await readChannel(client, op.channelId, block.number);
  if (row.kind === 'batch-claim') {
    const total = BigInt(op.totalClaimed!);
    if (state.totalClaimed >= total) {
      // Reached: by a transaction of ours whose hash never made it to the row, or by a larger claim.
      const logs = await client.getLogs({ address: BATCH_SETTLEMENT, event: claimedEvent, args: { channelId: op.channelId }, fromBlock: BigInt(row.fromBlock), toBlock: block.number });
      // No log yet is the state ahead of the logs (a node mid-block, a lagging log backend): "failed" would record a
      // paid claim as unpaid. The receipts of the block where the channel reached the total decide then.
      return judgeClaims(logs, total) ?? claimVerdictByBlock(client, op.channelId, total, BigInt(row.fromBlock), block.number);
    }
  } else if (state.refundNonce > BigInt(op.refundNonce!)) {
    return refundVerdict(client, row, op, block.number);
  }
  // Not reached. A transaction of ours the node no longer knows was dropped: nothing happened, the seller may ask again.
  if (row.txHash) return { kind: 'failed', reason: Reason.transactionFailed, message: 'the transaction was dropped before it was mined; nothing happened', txHash: row.txHash as Hash };
  return { kind: 'pending' };
}

/**
 * A refund whose nonce the channel has moved past: paid by the refund that spent the nonce, or nothing when that refund
 * found no unclaimed escrow (the contract spends the nonce and emits no `Refunded`). The logs name a paid refund; when
 * they name none, only the receipt of the transaction that spent the nonce decides: "no log" alone may be a log
 * backend behind the state (it would record a paid refund as unpaid).
 */
async function refundVerdict(client: PublicClient, row: SettlementRow, op: ChannelOperation, head: bigint): Promise<ChainVerdict> {
  const nonce = BigInt(op.refundNonce!);
  const logs = await client.getLogs({ address: BATCH_SETTLEMENT, event: refundedEvent, args: { channelId: op.channelId }, fromBlock: BigInt(row.fromBlock), toBlock: head });
  for (const log of logs.filter((l) => !l.removed)) {
    if (refundsWithNonce(await client.getTransaction({ hash: log.transactionHash }), nonce)) return { kind: 'settled', txHash: log.transactionHash, logIndex: log.logIndex };
  }
  const spentIn = await maybeBlock(client, await firstBlockWhere(BigInt(row.fromBlock), head, async (blockNumber) => (await readAt<bigint>(client, 'refundNonce', op.channelId, blockNumber)) > nonce));
  // The block or the receipt not served yet: the same lag, ask again next pass.
  if (!spentIn) return { kind: 'pending' };
  const spender = spentIn.transactions.find((tx) => refundsWithNonce(tx, nonce));
  if (!spender) {
    // A receiver-side `refund()` (or a refund signed for the same nonce that we did not send) spent it first.
    return { kind: 'failed', reason: 'invalid_batch_settlement_evm_refund_transaction_failed', message: "another refund spent the channel's refund nonce first: this one never ran", txHash: (row.txHash as Hash | null) ?? null };
  }
  const receipt = await maybeReceipt(client, spender.hash);
  if (!receipt) return { kind: 'pending' };
  const verdict = judgeRefundReceipt(receipt, op.channelId);
  return verdict.ok ? { kind: 'settled', txHash: receipt.transactionHash, logIndex: verdict.logIndex } : { kind: 'failed', reason: verdict.reason, message: verdict.message, txHash: receipt.transactionHash };
}

/** The block with its transactions; null while the node does not serve it yet. */
async function maybeBlock(client: PublicClient, blockNumber: bigint) {
  try {
    return await client.getBlock({ blockNumber, includeTransactions: true });
  } catch (error) {
    if (error instanceof BlockNotFoundError) return null;
    throw error;
  }
}

/**
 * The claim that took the channel to `total` or past it, read from the receipts of the first block whose state shows
 * it: exactly `total` is this increment, paid; more is a larger claim that came first.
 */
async function claimVerdictByBlock(client: PublicClient, channelId: Hex, total: bigint, from: bigint, head: bigint): Promise<ChainVerdict> {
  const reached = await firstBlockWhere(from, head, async (blockNumber) => (await readAt<readonly [bigint, bigint]>(client, 'channels', channelId, blockNumber))[1] >= total);
  const receipts = (await client.request({ method: 'eth_getBlockReceipts' as never, params: [toHex(reached)] as never })) as RpcTransactionReceipt[] | null;
  const logs = own((receipts ?? []).filter((r) => r.status === '0x1').flatMap((r) => r.logs.map((log) => formatLog(log as never))));
  const claims = parseEventLogs({ abi: batchAbi, eventName: 'Claimed', logs: logs as Log[] }).filter((l) => l.args.channelId.toLowerCase() === channelId.toLowerCase());
  // None: the block's receipts not served yet, ask again next pass.
  return judgeClaims(claims, total) ?? { kind: 'pending' };
}

/** The channel's `Claimed` logs say: this increment claimed (exactly `total`), a larger claim came first, or neither (null). */
function judgeClaims(logs: readonly ClaimedLog[], total: bigint): ChainVerdict | null {
  const live = logs.filter((l) => !l.removed);
  const exact = live.find((l) => l.args.newTotalClaimed === total);
  if (exact) return { kind: 'settled', txHash: exact.transactionHash!, logIndex: exact.logIndex! };
  if (!live.some((l) => l.args.newTotalClaimed! > total)) return null;
  return { kind: 'failed', reason: 'invalid_batch_settlement_evm_cumulative_below_claimed', message: 'the channel claimed a larger total first: this increment was never claimed on its own', txHash: null };
}

/** The first block in [from, to] where `holds` (it holds at `to`, and from there on). */
async function firstBlockWhere(from: bigint, to: bigint, holds: (blockNumber: bigint) => Promise<boolean>): Promise<bigint> {
  let [low, high] = [from, to];
  while (low < high) {
    const middle = (low + high) / 2n;
    if (await holds(middle)) high = middle;
    else low = middle + 1n;
  }
  return low;
}

/** Whether the transaction sends refundWithSignature with this nonce (directly, or inside the contract's multicall). */
function refundsWithNonce(tx: { to: Address | null; input: Hex }, nonce: bigint): boolean {
  if (!tx.to || !isAddressEqual(tx.to, BATCH_SETTLEMENT)) return false;
  const calls = (() => {
    try {
      const decoded = decodeFunctionData({ abi: batchAbi, data: tx.input });
      return decoded.functionName === 'multicall' ? [...(decoded.args[0] as Hex[])] : [tx.input];
    } catch {
      return [];
    }
  })();
  return calls.some((data) => {
    try {
      const decoded = decodeFunctionData({ abi: batchAbi, data });
      return decoded.functionName === 'refundWithSignature' && decoded.args[2] === nonce;
    } catch {
      return false;
    }
  });
}

/**
 * A claim row's request is its operation (it is never executed again from the row: a claim is one transaction for
 * many rows); a refund row's is the settle request it was claimed with (a takeover re-executes it), whose payload
 * names the channel and the nonce.
 */
export function operationOf(row: SettlementRow): ChannelOperation {
  if (row.kind === 'batch-claim') return row.request as ChannelOperation;
  const { payload, requirements } = row.request as { payload: { payload: { channelConfig: ChannelConfig; refundNonce: string } }; requirements: { network: string } };
  return { channelId: channelIdOf(payload.payload.channelConfig, requirements.network), refundNonce: payload.payload.refundNonce };
}
